#include "zero_engine.h"

#include <torch/autograd.h>

#include <stdexcept>

#include "collectives.h"

namespace memsweep::sharding {

ZeroEngine::ZeroEngine(ZeroOptions options)
    : options_(options), optimizer_(options.offload_optimizer) {
  if (options_.reduce_bucket_size < 1) {
    throw std::invalid_argument("reduce_bucket_size must be at least 1 element");
  }
}

void ZeroEngine::OnStageBegin(Stage stage, RunContext&) {
  if (stage != Stage::kBackward) return;
  if (options_.stage == 1 && !flat_grad_.defined()) {
    flat_grad_ = at::zeros({layout_.Padded()}, flat_params_.options());
    AttachGradients(params_, flat_grad_, layout_);
  }
  if (options_.stage == 2) {
    if (!owned_grad_.defined()) owned_grad_ = at::zeros({layout_.partition}, flat_params_.options());
    grads_.BeginBackward();
  }
}

void ZeroEngine::OnStageEnd(Stage stage, RunContext& ctx) {
  if (stage == Stage::kModel) Partition(ctx);
  if (stage == Stage::kBackward && options_.stage == 2) {
    grads_.ReduceRemaining(params_, Comm(), owned_grad_, options_.reduce_bucket_size);
  }
}

model::BlockRunner ZeroEngine::WrapBlockRunner(model::BlockRunner inner) {
  if (options_.stage != 2) return inner;
  return [this, inner](model::Block& block, const at::Tensor& x, const at::Tensor& cos,
                       const at::Tensor& sin, const model::AttentionInputs& inputs,
                       const model::AttentionFn& attention) {
    const size_t index = groups_.block_index.at(&block);
    at::Tensor out = inner(block, MarkBlockInput(x, this, index), cos, sin, inputs, attention);
    return MarkBlockOutput(out, this, index);
  };
}

void ZeroEngine::BlockBackwardBegins(size_t block) { grads_.Attach(params_, block); }

void ZeroEngine::BlockBackwardEnds(size_t block) {
  grads_.Reduce(params_, block, Comm(), owned_grad_, options_.reduce_bucket_size);
}

void ZeroEngine::AdoptGroupOptimizerParameters(RunContext& ctx, const std::vector<size_t>& built,
                                               const std::vector<at::Tensor>& updated) {
  optimizer_.AdoptGroup(ctx, updated, built, params_, layout_);
}

void ZeroEngine::AdoptOptimizerParameters(RunContext& ctx,
                                          const std::vector<at::Tensor>& updated) {
  optimizer_.Adopt(ctx, updated, params_, layout_);
}

double ZeroEngine::OptimizerStep(RunContext& ctx, const OptimizerStepSpec& spec) {
  torch::NoGradGuard no_grad;
  const int64_t begin = layout_.Begin(layout_.rank);
  at::Tensor grad;  // this rank's gradient partition, in the parameters' dtype
  if (options_.stage == 1) {
    AllReduceInBuckets(Comm(), flat_grad_, options_.reduce_bucket_size);
    grad = flat_grad_.narrow(0, begin, layout_.partition);
  } else {
    grad = owned_grad_;
  }
  const double norm = PartitionedNorm(Comm(), grad);
  at::Tensor owned_params = flat_params_.narrow(0, begin, layout_.partition);
  optimizer_.Step(ctx, owned_params, grad, ClipScale(norm, spec.grad_clip), spec);
  GatherPartitions(Comm(), flat_params_, layout_);
  for (at::Tensor& p : params_) p.mutable_grad() = at::Tensor();
  flat_grad_ = at::Tensor();
  owned_grad_ = at::Tensor();
  return norm;
}

void ZeroEngine::AddModelState(ModelStateTensors& state) const {
  if (owned_grad_.defined()) state.grads.push_back(owned_grad_);
  optimizer_.AddModelState(state);
}

void ZeroEngine::ParametersBuilt(const std::vector<size_t>& built, RunContext& ctx) {
  if (built.empty()) return;
  const char* plugin = options_.stage == 1 ? "sharding/zero1" : "sharding/zero2";
  if (!flat_params_.defined()) {
    comm_ = ctx.comm;
    params_ = ctx.model->Parameters();  // the groups not built yet: shapes only
    layout_ = FlatPartition(params_, Comm().WorldSize(), Comm().Rank());
    RequireFlatDtype(params_, built, params_[built.front()].scalar_type(), plugin);
    flat_params_ = at::zeros({layout_.Padded()}, params_[built.front()].options());
  }
  RequireFlatDtype(params_, built, flat_params_.scalar_type(), plugin);
  FlattenInto(params_, built, layout_, flat_params_);
}

void ZeroEngine::Partition(RunContext& ctx) {
  if (!flat_params_.defined()) {  // not built group by group: the whole model at once
    comm_ = ctx.comm;
    params_ = ctx.model->Parameters();
    RequireFlatDtype(params_, options_.stage == 1 ? "sharding/zero1" : "sharding/zero2");
    layout_ = FlatPartition(params_, Comm().WorldSize(), Comm().Rank());
    flat_params_ = FlattenParameters(params_, layout_);
  }
  if (options_.stage == 2) {
    groups_ = GroupByBlock(*ctx.model, params_);
    grads_ = GradientGroups(params_, groups_.groups, layout_);
  }
}

}  // namespace memsweep::sharding
