// OptimizerUpdate: the update at the end of every step as the training loop sees it — one
// interface whoever owns it: the host's AdamW over the tensors the precision slot names
// (HostAdamWUpdate), or the sharding slot's own partitioned step (ShardingSlotUpdate).
//
//   std::unique_ptr<OptimizerUpdate> update = MakeHostAdamWUpdate(tensors, options);
//   record.grad_norm = update->Step(spec);   // clip by the global norm, update, return the norm
//   update->ZeroGrad();                      // at step_end
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <vector>

#include "core/train/adamw.h"
#include "memsweep/strategy.h"

namespace memsweep::train {

class OptimizerUpdate {
 public:
  virtual ~OptimizerUpdate() = default;
  // Clips the gradients to spec.grad_clip by their global L2 norm, applies AdamW with spec's
  // hyperparameters, and returns the norm before clipping.
  virtual double Step(const OptimizerStepSpec& spec) = 0;
  // Releases the gradients (set to undefined) at step end and after a failed run.
  virtual void ZeroGrad() = 0;
  // Whether a step may be skipped (fp16 overflow): false when the owner keeps reduced gradients
  // of its own that a skip would carry into the next step.
  virtual bool Skippable() const = 0;
  // Adds what the update holds beyond the parameters to the model state (memory breakdown): the
  // updated tensors' gradients, and as optimizer state the AdamW moments and any updated tensor
  // that is not a parameter (fp32 master copies).
  virtual void AddModelState(const std::vector<at::Tensor>& params,
                             ModelStateTensors& tensors) const = 0;
  // The tensors whose gradients the update reads (RunContext::optimizer_parameters), or null
  // when they are the owner's own.
  virtual const std::vector<at::Tensor>* UpdatedTensors() const = 0;
};

// The host's AdamW over `updated` (the parameters, or one master copy per parameter).
std::unique_ptr<OptimizerUpdate> MakeHostAdamWUpdate(std::vector<at::Tensor> updated,
                                                     const AdamWOptions& options);

// The sharding slot's step, called through `step` (which reports the plugin's exceptions); the
// slot adds its own state to the memory breakdown (ShardingStrategy::AddModelState).
std::unique_ptr<OptimizerUpdate> MakeShardingSlotUpdate(
    std::function<double(const OptimizerStepSpec&)> step);

}  // namespace memsweep::train
