// FlatAdamW: AdamW on one flat slice of parameters (a rank's partition), element for element the
// host's train::AdamW (decoupled weight decay, bias correction), so that a sharded run follows
// the same trajectory as the single-process one.
#pragma once

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <cmath>

#include "memsweep/strategy.h"

namespace memsweep::sharding {

// p, grad, exp_avg, exp_avg_sq: same length, updated in place.
inline void FlatAdamWStep(at::Tensor& p, const at::Tensor& grad, at::Tensor& exp_avg,
                          at::Tensor& exp_avg_sq, const OptimizerStepSpec& spec) {
  torch::NoGradGuard no_grad;
  const double bias1 = 1.0 - std::pow(spec.beta1, static_cast<double>(spec.step));
  const double bias2 = 1.0 - std::pow(spec.beta2, static_cast<double>(spec.step));
  p.mul_(1.0 - spec.lr * spec.weight_decay);
  exp_avg.mul_(spec.beta1).add_(grad, 1.0 - spec.beta1);
  exp_avg_sq.mul_(spec.beta2).addcmul_(grad, grad, 1.0 - spec.beta2);
  const at::Tensor denom = (exp_avg_sq.sqrt() / std::sqrt(bias2)).add_(spec.eps);
  p.addcdiv_(exp_avg, denom, -spec.lr / bias1);
}

}  // namespace memsweep::sharding
