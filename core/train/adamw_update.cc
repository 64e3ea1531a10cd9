#include "memsweep/adamw_update.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <cmath>

namespace memsweep {

void AdamWUpdate(const at::Tensor& p, const at::Tensor& grad, const at::Tensor& exp_avg,
                 const at::Tensor& exp_avg_sq, const AdamWHyperparameters& h, int64_t step) {
  torch::NoGradGuard no_grad;
  const double bias1 = 1.0 - std::pow(h.beta1, static_cast<double>(step));
  const double bias2 = 1.0 - std::pow(h.beta2, static_cast<double>(step));
  at::Tensor param = p, m = exp_avg, v = exp_avg_sq;  // handles to the same storage
  param.mul_(1.0 - h.lr * h.weight_decay);
  m.mul_(h.beta1).add_(grad, 1.0 - h.beta1);
  v.mul_(h.beta2).addcmul_(grad, grad, 1.0 - h.beta2);
  const at::Tensor denom = v.sqrt().div_(std::sqrt(bias2)).add_(h.eps);
  param.addcdiv_(m, denom, -h.lr / bias1);
}

}  // namespace memsweep
