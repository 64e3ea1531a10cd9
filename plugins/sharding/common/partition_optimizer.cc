#include "partition_optimizer.h"

#include <torch/autograd.h>
#include <torch/utils.h>

#include <stdexcept>
#include <string>

#include "flat_adamw.h"

namespace memsweep::sharding {

void PartitionOptimizer::Adopt(RunContext& ctx, const std::vector<at::Tensor>& updated,
                               const std::vector<at::Tensor>& params, const FlatPartition& layout) {
  if (AreTheParameters(updated, params)) return;
  master_ = offload_ ? ctx.host_pool->Empty({layout.partition}, at::kFloat)
                     : at::empty({layout.partition}, params.front().options().dtype(at::kFloat));
  AdoptMasters(updated, params, layout, master_);
}

void PartitionOptimizer::AdoptGroup(RunContext& ctx, const std::vector<at::Tensor>& updated,
                                    const std::vector<size_t>& built,
                                    const std::vector<at::Tensor>& params,
                                    const FlatPartition& layout) {
  torch::NoGradGuard no_grad;
  if (updated.size() != built.size()) {
    throw std::invalid_argument("the precision slot handed over " + std::to_string(updated.size()) +
                                " tensors to update for " + std::to_string(built.size()) +
                                " parameters");
  }
  bool themselves = true;
  for (size_t k = 0; k < built.size(); ++k)
    themselves = themselves && updated[k].is_same(params[built[k]]);
  if (themselves) return;
  if (!master_.defined()) {
    master_ = offload_ ? ctx.host_pool->Empty({layout.partition}, at::kFloat)
                       : at::empty({layout.partition},
                                   at::TensorOptions().dtype(at::kFloat).device(ctx.device));
    master_.zero_();
  }
  for (size_t k = 0; k < built.size(); ++k) {
    if (updated[k].scalar_type() != at::kFloat || updated[k].numel() != params[built[k]].numel()) {
      throw std::invalid_argument("the precision slot's master copy of parameter " +
                                  std::to_string(built[k]) + " is not an fp32 tensor of its size");
    }
    CopyIntoPartition(updated[k], layout.offsets[built[k]], layout, master_);
  }
}

void PartitionOptimizer::Step(RunContext& ctx, at::Tensor& owned, at::Tensor& grad,
                              double grad_scale, const OptimizerStepSpec& spec,
                              bool owned_in_host_pool) {
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
  // Asynchronous only where it can be: from pinned host memory to a GPU (the meta device of an
  // estimate has no streams).
  if (master_.defined() && !master_.is_same(owned)) {
    owned.copy_(master_, /*non_blocking=*/offload_ && owned.is_cuda());
  }
}

void PartitionOptimizer::AddModelState(ModelStateTensors& state) const {
  if (offload_) return;
  if (master_.defined()) state.optimizer.push_back(master_);
  if (exp_avg_.defined()) {
    state.optimizer.push_back(exp_avg_);
    state.optimizer.push_back(exp_avg_sq_);
  }
}

void PartitionOptimizer::Allocate(RunContext& ctx, const at::Tensor& owned,
                                  bool owned_in_host_pool) {
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

}  // namespace memsweep::sharding
