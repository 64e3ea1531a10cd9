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
//   optimizer.Adopt(ctx, handed_over, params, layout);       // optimizer stage
//   optimizer.Step(ctx, owned, grad, ClipScale(norm, clip), spec);  // every update
#pragma once

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <vector>

#include "flat_adamw.h"
#include "flat_partition.h"
#include "memsweep/strategy.h"

namespace memsweep::sharding {

class PartitionOptimizer {
 public:
  explicit PartitionOptimizer(bool offload) : offload_(offload) {}

  // What the precision slot handed over (ShardingStrategy::AdoptOptimizerParameters): nothing to
  // keep when it is the parameters themselves, else this rank's partition of the masters.
  void Adopt(RunContext& ctx, const std::vector<at::Tensor>& updated,
             const std::vector<at::Tensor>& params, const FlatPartition& layout) {
    if (AreTheParameters(updated, params)) return;
    master_ = offload_ ? ctx.host_pool->Empty({layout.partition}, at::kFloat)
                       : at::empty({layout.partition}, params.front().options().dtype(at::kFloat));
    AdoptMasters(updated, params, layout, master_);
  }

  // AdamW on this rank's partition: `owned` (P elements, the parameters' dtype) and `grad` (P
  // elements, scaled by grad_scale before the update). `owned_in_host_pool`: ZeRO-3's
  // offload_param; an fp32 owned partition there is itself the offloaded master copy.
  void Step(RunContext& ctx, at::Tensor& owned, at::Tensor& grad, double grad_scale,
            const OptimizerStepSpec& spec, bool owned_in_host_pool = false) {
    torch::NoGradGuard no_grad;
    if (!exp_avg_.defined()) Allocate(ctx, owned, owned_in_host_pool);
    at::Tensor step_grad = grad;
    if (offload_) {
      host_grad_.copy_(grad);
      step_grad = host_grad_;
    }
    at::Tensor& target = master_.defined() ? master_ : owned;
    FlatAdamWStep(target, step_grad, exp_avg_, exp_avg_sq_, spec, grad_scale);
    // Rounded to the parameters' dtype; nothing to copy when the master is the owned partition.
    // From the host pool (pinned on CUDA) the copy back to the device is asynchronous: the next
    // read of master_ on the host comes after the next step's blocking gradient copy.
    if (master_.defined() && !master_.is_same(owned)) owned.copy_(master_, /*non_blocking=*/offload_);
  }

  // Device-side state (host-pool state is not device memory: it shows in host_pool_peak_bytes).
  void AddModelState(ModelStateTensors& state) const {
    if (offload_) return;
    if (master_.defined()) state.optimizer.push_back(master_);
    if (exp_avg_.defined()) {
      state.optimizer.push_back(exp_avg_);
      state.optimizer.push_back(exp_avg_sq_);
    }
  }

 private:
  void Allocate(RunContext& ctx, const at::Tensor& owned, bool owned_in_host_pool) {
    const int64_t n = owned.numel();
    if (!offload_) {
      exp_avg_ = at::zeros({n}, owned.options().dtype(at::kFloat));
      exp_avg_sq_ = at::zeros({n}, owned.options().dtype(at::kFloat));
      return;
    }
    HostPool& pool = *ctx.host_pool;
    exp_avg_ = pool.Zeros({n}, at::kFloat);
    exp_avg_sq_ = pool.Zeros({n}, at::kFloat);
    host_grad_ = pool.Zeros({n}, at::kFloat);
    if (master_.defined()) return;  // adopted from the precision slot
    if (owned_in_host_pool && owned.scalar_type() == at::kFloat) {
      master_ = owned;
    } else {
      master_ = pool.Empty({n}, at::kFloat);
      master_.copy_(owned);
    }
  }

  bool offload_;
  at::Tensor master_;  // fp32: bf16 parameters' masters, or the offloaded copy of fp32 ones
  at::Tensor exp_avg_, exp_avg_sq_;
  at::Tensor host_grad_;  // offload: the gradient partition, widened to fp32
};

}  // namespace memsweep::sharding
