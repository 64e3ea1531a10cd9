#include "flat_adamw.h"

#include <torch/autograd.h>
#include <torch/utils.h>

#include <algorithm>

#include "memsweep/adamw_update.h"

namespace memsweep::sharding {

void FlatAdamWStep(at::Tensor& p, at::Tensor& grad, at::Tensor& exp_avg, at::Tensor& exp_avg_sq,
                   const OptimizerStepSpec& spec, double grad_scale) {
  torch::NoGradGuard no_grad;
  const AdamWHyperparameters h{spec.lr, spec.beta1, spec.beta2, spec.eps, spec.weight_decay};
  const int64_t n = p.numel();
  for (int64_t begin = 0; begin < n; begin += kFlatAdamWChunk) {
    const int64_t length = std::min(kFlatAdamWChunk, n - begin);
    at::Tensor pc = p.narrow(0, begin, length);
    // fp32 gradients are scaled in place, as the host clips them; a bf16 chunk is widened into
    // a chunk-sized copy first.
    at::Tensor g = grad.narrow(0, begin, length);
    if (g.scalar_type() != at::kFloat) g = g.to(at::kFloat);
    if (grad_scale != 1.0) g.mul_(grad_scale);
    AdamWUpdate(pc, g, exp_avg.narrow(0, begin, length), exp_avg_sq.narrow(0, begin, length), h,
                spec.step);
  }
}

}  // namespace memsweep::sharding
