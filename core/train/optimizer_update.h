// OptimizerUpdate: the update at the end of every step as the training loop sees it — one
// interface whoever owns it: the optimizer slot's update over the tensors the precision slot
// names, run by the host after clipping (HostOptimizerUpdate), or the sharding slot's own
// partitioned step (ShardingSlotUpdate).
//
//   std::unique_ptr<OptimizerUpdate> update =
//       MakeHostOptimizerUpdate(tensors, optimizer_slot->MakeOptimizer(tensors), plugin);
//   record.grad_norm = update->Step(spec);   // clip by the global norm, update, return the norm
//   update->ZeroGrad();                      // at step_end
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <vector>

#include "core/plugin/active_strategy.h"
#include "memsweep/optimizer.h"
#include "memsweep/strategy.h"

namespace memsweep::train {

class OptimizerUpdate {
 public:
  virtual ~OptimizerUpdate() = default;
  // Clips the gradients to spec.grad_clip by their global L2 norm, applies the update with
  // spec's hyperparameters, and returns the norm before clipping.
  virtual double Step(const OptimizerStepSpec& spec) = 0;
  // Releases the gradients (set to undefined) at step end and after a failed run.
  virtual void ZeroGrad() = 0;
  // Whether a step may be skipped (fp16 overflow): false when the owner keeps reduced gradients
  // of its own that a skip would carry into the next step.
  virtual bool Skippable() const = 0;
  // Adds what the update holds beyond the parameters to the model state (memory breakdown): the
  // updated tensors' gradients, and as optimizer state the optimizer's state tensors and any
  // updated tensor that is not a parameter (fp32 master copies).
  virtual void AddModelState(const std::vector<at::Tensor>& params,
                             ModelStateTensors& tensors) const = 0;
  // The tensors whose gradients the update reads (RunContext::optimizer_parameters), or null
  // when they are the owner's own.
  virtual const std::vector<at::Tensor>* UpdatedTensors() const = 0;
};

// The optimizer slot's update over `updated` (the parameters, or one master copy per
// parameter): `optimizer` is what `plugin` made for them (OptimizerStrategy::MakeOptimizer);
// its exceptions name the plugin.
std::unique_ptr<OptimizerUpdate> MakeHostOptimizerUpdate(std::vector<at::Tensor> updated,
                                                         std::unique_ptr<Optimizer> optimizer,
                                                         const plugin::ActiveStrategy& plugin);

// The sharding slot's step, called through `step` (which reports the plugin's exceptions); the
// slot adds its own state to the memory breakdown (ShardingStrategy::AddModelState).
std::unique_ptr<OptimizerUpdate> MakeShardingSlotUpdate(
    std::function<double(const OptimizerStepSpec&)> step);

}  // namespace memsweep::train
