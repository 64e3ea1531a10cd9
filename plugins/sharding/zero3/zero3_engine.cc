#include "zero3_engine.h"

#include <torch/autograd.h>
#include <torch/utils.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "../common/bucketed_collectives.h"

namespace memsweep::sharding {

Zero3Engine::Zero3Engine(Zero3Options options)
    : options_(options), optimizer_(options.offload_optimizer) {
  if (options_.reduce_bucket_size < 1) {
    throw std::invalid_argument("reduce_bucket_size must be at least 1 element");
  }
  if (options_.prefetch_bucket_size < 0 || options_.param_persistence_threshold < 0) {
    throw std::invalid_argument("prefetch_bucket_size and param_persistence_threshold must not "
                                "be negative");
  }
}

void Zero3Engine::BeginPartition(RunContext& ctx, at::ScalarType dtype) {
  comm_ = ctx.comm;
  params_ = ctx.model->Parameters();  // parameters not built yet: shapes only
  layout_ = FlatPartition(params_, Comm().WorldSize(), Comm().Rank());
  groups_ = GroupByBlock(*ctx.model, params_);
  blocks_ = groups_.blocks;
  const at::TensorOptions options = at::TensorOptions().dtype(dtype).device(ctx.device);
  at::Tensor owned = options_.offload_param ? ctx.host_pool->Zeros({layout_.partition}, dtype)
                                            : at::zeros({layout_.partition}, options);
  units_ = std::make_unique<ParamUnits>(params_, groups_.groups.size(),
                                        options_.param_persistence_threshold, layout_, owned);
  built_.assign(params_.size(), false);
  group_added_.assign(groups_.groups.size(), false);
}

void Zero3Engine::ParametersBuilt(const std::vector<size_t>& built, RunContext& ctx) {
  if (built.empty()) return;
  if (!units_) BeginPartition(ctx, ctx.model->Parameters()[built.front()].scalar_type());
  RequireFlatDtype(params_, built, units_->Owned().scalar_type(), "sharding/zero3");
  for (size_t i : built) built_[i] = true;
  for (size_t g = 0; g < groups_.groups.size(); ++g) {
    if (group_added_[g]) continue;
    const auto& group = groups_.groups[g];
    if (!std::all_of(group.begin(), group.end(), [&](size_t i) { return built_[i]; })) continue;
    units_->AddGroup(g, group);
    group_added_[g] = true;
  }
}

void Zero3Engine::Partition(RunContext& ctx) {
  if (!units_) {  // not built group by group: the whole model at once
    const std::vector<at::Tensor> params = ctx.model->Parameters();
    RequireFlatDtype(params, "sharding/zero3");
    std::vector<size_t> all(params.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    ParametersBuilt(all, ctx);
  }
  for (size_t g = 0; g < group_added_.size(); ++g) {
    if (!group_added_[g]) {
      throw std::logic_error("sharding/zero3: the model stage ended with group " +
                             std::to_string(g) + "'s parameters not all built");
    }
  }
  grads_ = GradientGroups(params_, groups_.groups, layout_);
}

std::vector<StageHook> Zero3Engine::StageHooks() const {
  return {
      {Stage::kModel, HookPoint::kParametersBuilt,
       "partitions each gather unit once all its parameters are built"},
      {Stage::kModel, HookPoint::kEnd,
       "partitions a model not built by group; groups the gradients by block"},
      {Stage::kForward, HookPoint::kBegin,
       "gathers the parameters outside the blocks (embedding, final norm, LM head)"},
      {Stage::kBackward, HookPoint::kBegin,
       "allocates the rank's gradient partition (a step's first micro-batch); arms the "
       "per-block gradient reduction"},
      {Stage::kBackward, HookPoint::kEnd,
       "reduces the gradients outside the blocks to their owners; frees every gathered "
       "parameter"}};
}

void Zero3Engine::OnStageBegin(Stage stage, RunContext&) {
  if (stage == Stage::kForward) units_->Gather(Comm(), units_->PartitionedUnit(blocks_));
  if (stage == Stage::kBackward) {
    // The gradient partition lives from a step's first backward to the end of its update.
    if (!owned_grad_.defined()) {
      owned_grad_ = at::zeros({layout_.partition}, params_.front().options());
    }
    grads_.BeginBackward();
  }
}

void Zero3Engine::OnStageEnd(Stage stage, RunContext& ctx) {
  if (stage == Stage::kModel) Partition(ctx);
  if (stage == Stage::kBackward) {
    grads_.ReduceRemaining(params_, Comm(), owned_grad_, options_.reduce_bucket_size);
    units_->Release(units_->PartitionedUnit(blocks_));
    for (size_t b = 0; b < blocks_; ++b) units_->Release(units_->PartitionedUnit(b));
  }
}

void Zero3Engine::GatherBlock(size_t block, int direction) {
  const int unit = units_->PartitionedUnit(block);
  units_->Gather(Comm(), unit);
  const int64_t next = static_cast<int64_t>(block) + direction;
  if (options_.prefetch_bucket_size > 0 && next >= 0 && next < static_cast<int64_t>(blocks_)) {
    const int next_unit = units_->PartitionedUnit(static_cast<size_t>(next));
    if (units_->Numel(next_unit) <= options_.prefetch_bucket_size) units_->Gather(Comm(), next_unit);
  }
}

void Zero3Engine::BlockBackwardBegins(size_t block) {
  GatherBlock(block, -1);
  grads_.Attach(params_, block);
}

void Zero3Engine::BlockBackwardEnds(size_t block) {
  grads_.Reduce(params_, block, Comm(), owned_grad_, options_.reduce_bucket_size);
  units_->Release(units_->PartitionedUnit(block));
}

model::BlockRunner Zero3Engine::WrapBlockRunner(model::BlockRunner inner) {
  return [this, inner](model::Block& block, const at::Tensor& x, const at::Tensor& cos,
                       const at::Tensor& sin, const model::AttentionInputs& inputs,
                       const model::AttentionFn& attention) {
    const size_t index = groups_.block_index.at(&block);
    GatherBlock(index, +1);
    at::Tensor out = inner(block, MarkBlockInput(x, this, index), cos, sin, inputs, attention);
    units_->Release(units_->PartitionedUnit(index));
    return MarkBlockOutput(out, this, index);
  };
}

void Zero3Engine::AdoptGroupOptimizerParameters(RunContext& ctx, const std::vector<size_t>& built,
                                                const std::vector<at::Tensor>& updated) {
  optimizer_.AdoptGroup(ctx, updated, built, params_, layout_);
}

void Zero3Engine::AdoptOptimizerParameters(RunContext& ctx, const std::vector<at::Tensor>& updated) {
  optimizer_.Adopt(ctx, updated, params_, layout_);
}

double Zero3Engine::OptimizerStep(RunContext& ctx, const OptimizerStepSpec& spec) {
  torch::NoGradGuard no_grad;
  const double norm = PartitionedNorm(Comm(), owned_grad_);
  at::Tensor owned = units_->Owned();
  optimizer_.Step(ctx, owned, owned_grad_, ClipScale(norm, spec.grad_clip), spec,
                  /*owned_in_host_pool=*/options_.offload_param);
  units_->RefreshPersistent(Comm());
  owned_grad_ = at::Tensor();
  return norm;
}

void Zero3Engine::AddModelState(ModelStateTensors& state) const {
  if (!options_.offload_param && units_) state.params.push_back(units_->Owned());
  if (owned_grad_.defined()) state.grads.push_back(owned_grad_);
  optimizer_.AddModelState(state);
}

}  // namespace memsweep::sharding
