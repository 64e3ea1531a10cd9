#include "core/train/grad_clip.h"

#include <limits>

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/utils.h>

namespace memsweep::train {

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
