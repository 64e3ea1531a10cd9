#include "zero_engine.h"

#include <torch/autograd.h>
#include <torch/utils.h>

#include <stdexcept>
#include <string>
#include <unordered_map>

#include "bucketed_collectives.h"

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

std::vector<StageHook> ZeroEngine::StageHooks() const {
  std::vector<StageHook> hooks{
      {Stage::kModel, HookPoint::kParametersBuilt,
       "moves the group into the flat parameter buffer, or holds it to the end (a frozen base)"},
      {Stage::kModel, HookPoint::kEnd,
       options_.stage == 1 ? "flattens the trainable parameters not flattened by group"
                           : "flattens the trainable parameters not flattened by group; groups "
                             "the gradients by block"}};
  if (options_.stage == 1) {
    hooks.push_back({Stage::kBackward, HookPoint::kBegin,
                     "allocates the full flat gradient (a step's first micro-batch)"});
  } else {
    hooks.push_back({Stage::kBackward, HookPoint::kBegin,
                     "allocates the rank's gradient partition (a step's first micro-batch); "
                     "arms the per-block gradient reduction"});
    hooks.push_back({Stage::kBackward, HookPoint::kEnd,
                     "reduces the gradients outside the blocks to their owners"});
  }
  return hooks;
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
  if (!deferred_) {
    optimizer_.AdoptGroup(ctx, updated, built, params_, layout_);
    return;
  }
  if (updated.size() != built.size()) {
    throw std::invalid_argument("the precision slot handed over " + std::to_string(updated.size()) +
                                " tensors to update for " + std::to_string(built.size()) +
                                " parameters");
  }
  // Held until the end of the model stage, where the layout of the trainable parameters is known.
  const std::vector<at::Tensor> all = ctx.model->Parameters();
  for (size_t k = 0; k < built.size(); ++k) {
    if (!updated[k].is_same(all.at(built[k]))) held_masters_.emplace_back(all[built[k]], updated[k]);
  }
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

namespace {

const char* PluginName(int stage) { return stage == 1 ? "sharding/zero1" : "sharding/zero2"; }

}  // namespace

void ZeroEngine::ParametersBuilt(const std::vector<size_t>& built, RunContext& ctx) {
  if (built.empty() || deferred_) return;
  const char* plugin = PluginName(options_.stage);
  const std::vector<at::Tensor> all = ctx.model->Parameters();
  if (params_.empty()) {
    comm_ = ctx.comm;
    params_ = all;  // the groups not built yet: shapes only
    layout_ = FlatPartition(params_, Comm().WorldSize(), Comm().Rank());
  }
  // A frozen parameter, or one the model did not have when the layout was made (an adapter's):
  // the trainable parameters are known only once every group is built.
  for (size_t i : built) {
    if (i >= params_.size() || !params_[i].is_same(all.at(i)) || !all[i].requires_grad()) {
      DeferFlattening();
      return;
    }
  }
  if (!flat_params_.defined()) {
    RequireFlatDtype(params_, built, params_[built.front()].scalar_type(), plugin);
    flat_params_ = at::zeros({layout_.Padded()}, params_[built.front()].options());
  }
  RequireFlatDtype(params_, built, flat_params_.scalar_type(), plugin);
  FlattenInto(params_, built, layout_, flat_params_);
  flattened_.insert(flattened_.end(), built.begin(), built.end());
}

void ZeroEngine::DeferFlattening() {
  deferred_ = true;
  const at::Tensor partition = optimizer_.ReleaseMasters();
  if (!partition.defined()) return;
  // The master copies of the groups flattened so far, gathered back from their owners' partitions
  // (every rank builds the same groups, so every rank gets here at the same group).
  at::Tensor full = at::zeros({layout_.Padded()}, flat_params_.options().dtype(at::kFloat));
  full.narrow(0, layout_.Begin(layout_.rank), layout_.partition).copy_(partition);
  GatherPartitions(Comm(), full, layout_);
  for (size_t i : flattened_) {
    held_masters_.emplace_back(
        params_[i], full.narrow(0, layout_.offsets[i], params_[i].numel()).view(params_[i].sizes()));
  }
}

void ZeroEngine::Partition(RunContext& ctx) {
  const char* plugin = PluginName(options_.stage);
  // Not built group by group (the whole model at once), or a frozen base: the trainable
  // parameters, flattened now (groups flattened before are moved into the new buffer).
  if (!flat_params_.defined() || deferred_) {
    comm_ = ctx.comm;
    params_.clear();
    for (const at::Tensor& p : ctx.model->Parameters()) {
      if (p.requires_grad()) params_.push_back(p);
    }
    if (params_.empty()) {
      throw std::invalid_argument(std::string(plugin) + " found no parameter that trains");
    }
    RequireFlatDtype(params_, plugin);
    layout_ = FlatPartition(params_, Comm().WorldSize(), Comm().Rank());
    flat_params_ = FlattenParameters(params_, layout_);
    flattened_.clear();
    if (!held_masters_.empty()) {
      std::unordered_map<const c10::TensorImpl*, at::Tensor> master_of;
      for (const auto& [param, master] : held_masters_) {
        master_of[param.unsafeGetTensorImpl()] = master;
      }
      std::vector<at::Tensor> masters;
      for (const at::Tensor& p : params_) {
        const auto found = master_of.find(p.unsafeGetTensorImpl());
        if (found == master_of.end()) {
          throw std::logic_error(std::string(plugin) + ": the precision slot handed over no master "
                                 "copy for a trainable parameter");
        }
        masters.push_back(found->second);
      }
      held_masters_.clear();
      master_of.clear();
      optimizer_.Adopt(ctx, masters, params_, layout_);
    }
  }
  if (options_.stage == 2) {
    groups_ = GroupByBlock(*ctx.model, params_);
    grads_ = GradientGroups(params_, groups_.groups, layout_);
  }
}

}  // namespace memsweep::sharding
