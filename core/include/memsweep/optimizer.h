// The optimizer slot's update: what a plugin of the `optimizer` slot returns
// (OptimizerStrategy::MakeOptimizer, memsweep/strategy.h), and what the trainer calls once per
// optimizer step, after it clipped the gradients by their global norm.
//
//   class MyAdam final : public memsweep::Optimizer {
//     void Step(const memsweep::OptimizerStepSpec& spec) override { ... tensors_[i].grad() ... }
//     std::vector<at::Tensor> StateTensors() const override { return state_; }
//   };
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace memsweep {

// What one optimizer step uses: the schedule's learning rate and [optimizer]'s hyperparameters.
struct OptimizerStepSpec {
  double lr = 0.0;
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.0;
  double grad_clip = 0.0;  // global L2 norm; 0 = no clipping (the host clips before Step)
  int64_t step = 0;        // 1 for the first update (AdamW bias correction)
};

class Optimizer {
 public:
  virtual ~Optimizer();
  // Updates, in place and without autograd recording, each of its tensors that has a gradient
  // (.grad(); a tensor without one is left alone, its state not created). State is created the
  // first time a tensor's gradient is seen, as torch's optimizers do, so its bytes appear in the
  // first optimizer step. The host releases the gradients after the step (set to undefined).
  virtual void Step(const OptimizerStepSpec& spec) = 0;
  // Every tensor of state it holds now (the memory breakdown's `optimizer` figure counts their
  // distinct storages). Temporaries of Step are not state: they show in the step's peak.
  virtual std::vector<at::Tensor> StateTensors() const = 0;
};

}  // namespace memsweep
