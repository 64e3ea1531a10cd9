// FlatAdamW: AdamW on one flat slice of parameters (a rank's partition), element for element the
// host's train::AdamW (decoupled weight decay, bias correction), so that a sharded run follows
// the same trajectory as the single-process one. The slice is updated in chunks of at most
// kFlatAdamWChunk elements, so the update's temporaries stay a few MiB however large the
// partition (element-wise, so chunking changes no value).
#pragma once

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "memsweep/strategy.h"

namespace memsweep::sharding {

constexpr int64_t kFlatAdamWChunk = int64_t{1} << 20;

// p, exp_avg, exp_avg_sq: fp32, 1-D, same length, updated in place. grad: the same length, fp32
// or bf16 (widened a chunk at a time), multiplied by grad_scale (clipping) before the update, as
// the host clips its fp32 gradients in place before AdamW (an fp32 grad is left scaled).
inline void FlatAdamWStep(at::Tensor& p, at::Tensor& grad, at::Tensor& exp_avg,
                          at::Tensor& exp_avg_sq, const OptimizerStepSpec& spec,
                          double grad_scale = 1.0) {
  torch::NoGradGuard no_grad;
  const double bias1 = 1.0 - std::pow(spec.beta1, static_cast<double>(spec.step));
  const double bias2 = 1.0 - std::pow(spec.beta2, static_cast<double>(spec.step));
  const int64_t n = p.numel();
  for (int64_t begin = 0; begin < n; begin += kFlatAdamWChunk) {
    const int64_t length = std::min(kFlatAdamWChunk, n - begin);
    at::Tensor pc = p.narrow(0, begin, length);
    // fp32 gradients are scaled in place, as the host clips them; a bf16 chunk is widened into
    // a chunk-sized copy first.
    at::Tensor g = grad.narrow(0, begin, length);
    if (g.scalar_type() != at::kFloat) g = g.to(at::kFloat);
    if (grad_scale != 1.0) g.mul_(grad_scale);
    at::Tensor m = exp_avg.narrow(0, begin, length);
    at::Tensor v = exp_avg_sq.narrow(0, begin, length);
    pc.mul_(1.0 - spec.lr * spec.weight_decay);
    m.mul_(spec.beta1).add_(g, 1.0 - spec.beta1);
    v.mul_(spec.beta2).addcmul_(g, g, 1.0 - spec.beta2);
    const at::Tensor denom = v.sqrt().div_(std::sqrt(bias2)).add_(spec.eps);
    pc.addcdiv_(m, denom, -spec.lr / bias1);
  }
}

}  // namespace memsweep::sharding
