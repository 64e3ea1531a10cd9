// AdamW (decoupled weight decay, Loshchilov & Hutter) over a list of parameters.
//
// State tensors (exp_avg, exp_avg_sq) are created on the first step, as PyTorch does, so the
// optimizer-state bytes appear in memory at the first optimizer step. Parameters without a
// gradient are skipped.
//
//   AdamW opt(model->parameters(), {.lr = 3e-4, .weight_decay = 0.1});
//   opt.SetLearningRate(schedule.At(step));
//   opt.Step();
//   opt.ZeroGrad();   // gradients set to undefined (set_to_none), freeing their memory
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace memsweep::train {

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

class AdamW {
 public:
  AdamW(std::vector<at::Tensor> params, AdamWOptions options);

  void SetLearningRate(double lr) { options_.lr = lr; }
  void Step();
  void ZeroGrad();

  const std::vector<at::Tensor>& Parameters() const { return params_; }
  // Every state tensor (for the memory breakdown).
  std::vector<at::Tensor> StateTensors() const;

 private:
  std::vector<at::Tensor> params_;
  std::vector<at::Tensor> exp_avg_, exp_avg_sq_;
  AdamWOptions options_;
  int64_t step_ = 0;
};

// Scales all gradients so that their global L2 norm is at most max_norm (no-op if max_norm <= 0).
// Returns the norm before clipping.
double ClipGradNorm(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace memsweep::train
