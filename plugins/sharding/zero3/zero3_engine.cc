#include "zero3_engine.h"

#include <torch/autograd.h>

#include <stdexcept>

#include "../common/collectives.h"
#include "../common/flat_adamw.h"

namespace memsweep::sharding {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

Zero3Engine* EngineOf(AutogradContext* ctx) {
  return reinterpret_cast<Zero3Engine*>(ctx->saved_data["engine"].toInt());
}

// Identity on the block's output; its backward runs first among the block's nodes: gather.
struct GatherBeforeBackward : torch::autograd::Function<GatherBeforeBackward> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t engine,
                            int64_t block) {
    ctx->saved_data["engine"] = engine;
    ctx->saved_data["block"] = block;
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    EngineOf(ctx)->BeforeBlockBackward(static_cast<size_t>(ctx->saved_data["block"].toInt()));
    return {grads[0], at::Tensor(), at::Tensor()};
  }
};

// Identity on the block's input; its backward runs once every node of the block that leads to
// the input has run: release.
struct ReleaseAfterBackward : torch::autograd::Function<ReleaseAfterBackward> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t engine,
                            int64_t block) {
    ctx->saved_data["engine"] = engine;
    ctx->saved_data["block"] = block;
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    EngineOf(ctx)->AfterBlockBackward(static_cast<size_t>(ctx->saved_data["block"].toInt()));
    return {grads[0], at::Tensor(), at::Tensor()};
  }
};

}  // namespace

Zero3Engine::Zero3Engine(Zero3Options options) : options_(options) {
  if (options_.reduce_bucket_size < 1) {
    throw std::invalid_argument("reduce_bucket_size must be at least 1 element");
  }
  if (options_.prefetch_bucket_size < 0 || options_.param_persistence_threshold < 0) {
    throw std::invalid_argument("prefetch_bucket_size and param_persistence_threshold must not "
                                "be negative");
  }
}

void Zero3Engine::Partition(RunContext& ctx) {
  comm_ = ctx.comm;
  params_ = ctx.model->parameters();
  layout_ = FlatPartition(params_, Comm().WorldSize(), Comm().Rank());
  // Which group each parameter belongs to: its block, or group `blocks_` (outside the blocks).
  const auto& blocks = ctx.model->blocks();
  blocks_ = blocks.size();
  std::unordered_map<const c10::TensorImpl*, size_t> group_of;
  for (size_t b = 0; b < blocks.size(); ++b) {
    block_index_[blocks[b].get()] = b;
    for (const at::Tensor& p : blocks[b]->parameters()) group_of[p.unsafeGetTensorImpl()] = b;
  }
  std::vector<std::vector<size_t>> groups(blocks_ + 1);
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto found = group_of.find(params_[i].unsafeGetTensorImpl());
    groups[found == group_of.end() ? blocks_ : found->second].push_back(i);
  }
  at::Tensor owned = options_.offload_param
                         ? ctx.host_pool->Zeros({layout_.partition}, at::kFloat)
                         : at::zeros({layout_.partition}, params_.front().options());
  units_ = std::make_unique<ParamUnits>(params_, groups, options_.param_persistence_threshold,
                                        layout_, owned);
  owned_grad_ = at::zeros({layout_.partition}, params_.front().options());
}

void Zero3Engine::OnStageBegin(Stage stage, RunContext&) {
  if (stage == Stage::kForward) units_->Gather(Comm(), units_->PartitionedUnit(blocks_));
  if (stage == Stage::kBackward) {
    flat_grad_ = at::zeros({layout_.Padded()}, params_.front().options());
    AttachGradients(params_, flat_grad_, layout_);
  }
}

void Zero3Engine::OnStageEnd(Stage stage, RunContext& ctx) {
  if (stage == Stage::kModel) Partition(ctx);
  if (stage == Stage::kBackward) {
    torch::NoGradGuard no_grad;
    ReduceScatterInBuckets(Comm(), flat_grad_, owned_grad_, layout_, options_.reduce_bucket_size);
    DetachGradients(params_);
    flat_grad_ = at::Tensor();
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

void Zero3Engine::BeforeBlockBackward(size_t block) { GatherBlock(block, -1); }

void Zero3Engine::AfterBlockBackward(size_t block) {
  units_->Release(units_->PartitionedUnit(block));
}

model::BlockRunner Zero3Engine::WrapBlockRunner(model::BlockRunner inner) {
  return [this, inner](model::DecoderBlockImpl& block, const at::Tensor& x, const at::Tensor& cos,
                       const at::Tensor& sin, const model::AttentionInputs& inputs,
                       const model::AttentionFn& attention) {
    const size_t index = block_index_.at(&block);
    const auto engine = reinterpret_cast<int64_t>(this);
    GatherBlock(index, +1);
    const bool track = x.requires_grad();
    const at::Tensor input =
        track ? ReleaseAfterBackward::apply(x, engine, static_cast<int64_t>(index)) : x;
    at::Tensor out = inner(block, input, cos, sin, inputs, attention);
    units_->Release(units_->PartitionedUnit(index));
    return track ? GatherBeforeBackward::apply(out, engine, static_cast<int64_t>(index)) : out;
  };
}

double Zero3Engine::OptimizerStep(RunContext& ctx, const OptimizerStepSpec& spec) {
  torch::NoGradGuard no_grad;
  const double norm = PartitionedNorm(Comm(), owned_grad_);
  ClipByNorm(owned_grad_, norm, spec.grad_clip);
  at::Tensor owned = units_->Owned();
  const int64_t n = layout_.partition;
  if (!exp_avg_.defined()) {
    if (options_.offload_optimizer) {
      exp_avg_ = ctx.host_pool->Zeros({n}, at::kFloat);
      exp_avg_sq_ = ctx.host_pool->Zeros({n}, at::kFloat);
      host_grad_ = ctx.host_pool->Zeros({n}, at::kFloat);
      // With the parameters offloaded too, the owned partition is already the host master copy.
      master_ = options_.offload_param ? owned : ctx.host_pool->Empty({n}, at::kFloat);
      if (!options_.offload_param) master_.copy_(owned);
    } else {
      exp_avg_ = at::zeros({n}, owned_grad_.options());
      exp_avg_sq_ = at::zeros({n}, owned_grad_.options());
    }
  }
  if (options_.offload_optimizer) {
    host_grad_.copy_(owned_grad_);
    FlatAdamWStep(master_, host_grad_, exp_avg_, exp_avg_sq_, spec);
    if (!options_.offload_param) owned.copy_(master_);
  } else {
    FlatAdamWStep(owned, owned_grad_, exp_avg_, exp_avg_sq_, spec);
  }
  units_->RefreshPersistent(Comm());
  owned_grad_.zero_();
  return norm;
}

void Zero3Engine::AddModelState(ModelStateTensors& state) const {
  if (!options_.offload_param && units_) state.params.push_back(units_->Owned());
  if (owned_grad_.defined()) state.grads.push_back(owned_grad_);
  if (exp_avg_.defined() && !options_.offload_optimizer) {
    state.optimizer.push_back(exp_avg_);
    state.optimizer.push_back(exp_avg_sq_);
  }
}

}  // namespace memsweep::sharding
