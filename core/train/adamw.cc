#include "core/train/adamw.h"

#include <limits>

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/utils.h>

#include "memsweep/adamw_update.h"
#include "memsweep/allocation_label.h"

namespace memsweep::train {

AdamW::AdamW(std::vector<at::Tensor> params, AdamWOptions options)
    : params_(std::move(params)), options_(options) {
  exp_avg_.resize(params_.size());
  exp_avg_sq_.resize(params_.size());
}

void AdamW::Step() {
  torch::NoGradGuard no_grad;
  ++step_;
  const AdamWHyperparameters h{options_.lr, options_.beta1, options_.beta2, options_.eps,
                               options_.weight_decay};
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& p = params_[i];
    const at::Tensor& grad = p.grad();
    if (!grad.defined()) continue;
    if (!exp_avg_[i].defined()) {
      memory::AllocationLabel label("optimizer state");
      exp_avg_[i] = at::zeros_like(p, at::MemoryFormat::Contiguous);
      exp_avg_sq_[i] = at::zeros_like(p, at::MemoryFormat::Contiguous);
    }
    AdamWUpdate(p, grad, exp_avg_[i], exp_avg_sq_[i], h, step_);
  }
}

void AdamW::ZeroGrad() {
  for (at::Tensor& p : params_) p.mutable_grad() = at::Tensor();
}

std::vector<at::Tensor> AdamW::StateTensors() const {
  std::vector<at::Tensor> state;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (exp_avg_[i].defined()) state.push_back(exp_avg_[i]);
    if (exp_avg_sq_[i].defined()) state.push_back(exp_avg_sq_[i]);
  }
  return state;
}

double ClipGradNorm(const std::vector<at::Tensor>& params, double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> norms;
  for (const at::Tensor& p : params) {
    if (p.grad().defined()) norms.push_back(p.grad().norm(2).to(at::kDouble));
  }
  if (norms.empty()) return 0.0;
  const at::Tensor total_norm = at::stack(norms).norm(2);
  // An estimate's gradients have no values: the norm's tensors are allocated, the scaling (in
  // place) allocates nothing.
  if (total_norm.is_meta()) return std::numeric_limits<double>::quiet_NaN();
  const double total = total_norm.item<double>();
  if (max_norm > 0 && total > max_norm) {
    const double scale = max_norm / (total + 1e-6);
    for (const at::Tensor& p : params) {
      if (p.grad().defined()) p.grad().mul_(scale);
    }
  }
  return total;
}

}  // namespace memsweep::train
