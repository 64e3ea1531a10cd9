#include "core/train/adamw.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <cmath>

namespace memsweep::train {

AdamW::AdamW(std::vector<at::Tensor> params, AdamWOptions options)
    : params_(std::move(params)), options_(options) {
  exp_avg_.resize(params_.size());
  exp_avg_sq_.resize(params_.size());
}

void AdamW::Step() {
  torch::NoGradGuard no_grad;
  ++step_;
  const double bias1 = 1.0 - std::pow(options_.beta1, static_cast<double>(step_));
  const double bias2 = 1.0 - std::pow(options_.beta2, static_cast<double>(step_));
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor& p = params_[i];
    const at::Tensor& grad = p.grad();
    if (!grad.defined()) continue;
    if (!exp_avg_[i].defined()) {
      exp_avg_[i] = at::zeros_like(p, at::MemoryFormat::Contiguous);
      exp_avg_sq_[i] = at::zeros_like(p, at::MemoryFormat::Contiguous);
    }
    p.mul_(1.0 - options_.lr * options_.weight_decay);
    exp_avg_[i].mul_(options_.beta1).add_(grad, 1.0 - options_.beta1);
    exp_avg_sq_[i].mul_(options_.beta2).addcmul_(grad, grad, 1.0 - options_.beta2);
    const at::Tensor denom = (exp_avg_sq_[i].sqrt() / std::sqrt(bias2)).add_(options_.eps);
    p.addcdiv_(exp_avg_[i], denom, -options_.lr / bias1);
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
  const double total = at::stack(norms).norm(2).item<double>();
  if (max_norm > 0 && total > max_norm) {
    const double scale = max_norm / (total + 1e-6);
    for (const at::Tensor& p : params) {
      if (p.grad().defined()) p.grad().mul_(scale);
    }
  }
  return total;
}

}  // namespace memsweep::train
