// PartitionOptimizer: the AdamW state of one rank's partition, as the ZeRO engines (stages 1-3)
// keep it, and the update that writes the rank's parameter partition.
//
//   fp32 parameters  AdamW updates the owned parameter partition in place; with
//                    offload_optimizer = cpu an fp32 master copy of it lives in the host pool.
//   bf16 parameters  the rank keeps its partition of the precision slot's fp32 master copies
//                    (Adopt, in the optimizer stage); AdamW updates it and the result is rounded
//                    into the bf16 partition.
// exp_avg and exp_avg_sq (fp32) are created at the first update, as the host's AdamW does; with
// offload_optimizer = cpu they, the master and an fp32 copy of the gradient live in the host pool.
//
//   PartitionOptimizer optimizer(options.offload_optimizer);
//   optimizer.Adopt(ctx, handed_over, params, layout);       // optimizer stage, or per group:
//   optimizer.AdoptGroup(ctx, handed_over, built, params, layout);   // model stage
//   optimizer.Step(ctx, owned, grad, ClipScale(norm, clip), spec);  // every update
#pragma once

#include <ATen/ATen.h>

#include <utility>
#include <vector>

#include "flat_partition.h"
#include "memsweep/strategy.h"

namespace memsweep::sharding {

class PartitionOptimizer {
 public:
  explicit PartitionOptimizer(bool offload) : offload_(offload) {}

  // What the precision slot handed over (ShardingStrategy::AdoptOptimizerParameters): nothing to
  // keep when it is the parameters themselves, else this rank's partition of the masters.
  void Adopt(RunContext& ctx, const std::vector<at::Tensor>& updated,
             const std::vector<at::Tensor>& params, const FlatPartition& layout);
  // The same for one group of a model built group by group (ShardingStrategy::
  // AdoptGroupOptimizerParameters): updated[k] belongs to params[built[k]]; the master partition
  // is allocated with the first group that hands masters over.
  void AdoptGroup(RunContext& ctx, const std::vector<at::Tensor>& updated,
                  const std::vector<size_t>& built, const std::vector<at::Tensor>& params,
                  const FlatPartition& layout);

  // Gives up the master partition adopted so far (undefined when none was): the engine lays the
  // parameters out anew and adopts the masters again.
  at::Tensor ReleaseMasters() { return std::exchange(master_, at::Tensor()); }

  // AdamW on this rank's partition: `owned` (P elements, the parameters' dtype) and `grad` (P
  // elements, scaled by grad_scale before the update). `owned_in_host_pool`: ZeRO-3's
  // offload_param; an fp32 owned partition there is itself the offloaded master copy.
  void Step(RunContext& ctx, at::Tensor& owned, at::Tensor& grad, double grad_scale,
            const OptimizerStepSpec& spec, bool owned_in_host_pool = false);

  // Device-side state (host-pool state is not device memory: it shows in host_pool_peak_bytes).
  void AddModelState(ModelStateTensors& state) const;

 private:
  void Allocate(RunContext& ctx, const at::Tensor& owned, bool owned_in_host_pool);

  bool offload_;
  at::Tensor master_;  // fp32: bf16 parameters' masters, or the offloaded copy of fp32 ones
  at::Tensor exp_avg_, exp_avg_sq_;
  at::Tensor host_grad_;  // offload: the gradient partition, widened to fp32
};

}  // namespace memsweep::sharding
