// One AdamW update, in place: decoupled weight decay, the two moment estimates, bias correction.
// memsweep's AdamW arithmetic in one place, shared by the optimizer slot's default
// (plugins/optimizer/adamw) and by sharding plugins that update their own partition of the
// parameters, so that a sharded run updates exactly as a single process would from the same
// gradients (tests/plugins/sharding/ compare the trajectories).
//
//   AdamWUpdate(p, grad, exp_avg, exp_avg_sq, {lr, beta1, beta2, eps, weight_decay}, step);
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace memsweep {

struct AdamWHyperparameters {
  double lr = 0.0;
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.0;
};

// p, exp_avg, exp_avg_sq: the same shape and dtype (fp32); grad: the same shape, p's dtype.
// step: 1 for the first update (bias correction 1 − β^step). Runs without autograd recording.
// Contiguous fp32 CPU tensors are updated in one fused pass; others op by op (the same formula,
// rounded after each op), over slices of at most 2^24 elements so that the op-by-op form's
// temporary stays small (64 MiB in fp32).
//   p ← p·(1 − lr·wd);  m ← β1·m + (1 − β1)·g;  v ← β2·v + (1 − β2)·g²;
//   p ← p − lr/(1 − β1^step) · m / (√v / √(1 − β2^step) + eps)
void AdamWUpdate(const at::Tensor& p, const at::Tensor& grad, const at::Tensor& exp_avg,
                 const at::Tensor& exp_avg_sq, const AdamWHyperparameters& h, int64_t step);

}  // namespace memsweep
