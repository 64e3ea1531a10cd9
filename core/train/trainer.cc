#include "core/train/trainer.h"

#include <ATen/ATen.h>
#include <c10/core/AllocatorConfig.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>
#include <torch/autograd.h>
#include <torch/utils.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

#include "memsweep/allocation_label.h"
#include "core/env/cpu_gemm.h"
#include "core/env/cuda_probe.h"
#include "core/env/environment.h"
#include "core/env/gemm_calibration.h"
#include "core/env/threads.h"
#include "core/memory/device_meter.h"
#include "core/memory/malloc_host_pool.h"
#include "core/memory/meta_host_pool.h"
#include "core/memory/meta_tracking.h"
#include "core/memory/pinned_host_pool.h"
#include "core/memory/storage_bytes.h"
#include "core/model/hf_weights.h"
#include "core/model/llama.h"
#include "core/model/hf_parameter_order.h"
#include "core/train/optimizer_update.h"
#include "core/train/lr_schedule.h"
#include "core/train/memory_probe.h"
#include "core/train/step_timer.h"
#include "core/train/strategy_hooks.h"
#include "core/train/summary.h"

namespace memsweep::train {
namespace {

using Clock = std::chrono::steady_clock;

// Restores the allocator's budget and stage label when a run ends, however it ends.
class BudgetScope {
 public:
  BudgetScope(memory::DeviceMeter& tracker, std::optional<int64_t> budget)
      : tracker_(tracker), previous_(tracker.Budget()) {
    tracker_.SetBudget(budget);
  }
  ~BudgetScope() {
    tracker_.SetBudget(previous_);
    tracker_.SetStage("idle");
  }

 private:
  memory::DeviceMeter& tracker_;
  std::optional<int64_t> previous_;
};

// Everything a run allocates lives here, so that leaving Run() frees it all.
struct RunState {
  model::LlamaModel model{nullptr};
  std::unique_ptr<data::BatchSource> batches;
  std::unique_ptr<OptimizerUpdate> update;  // the optimizer slot's or the sharding slot's step
  LrSchedule schedule;
  data::DataConfig data;  // as the batching strategy configured it
  ShardingStrategy* sharding = nullptr;  // null until the optimizer stage
};

ModelState MeasureModelState(const RunState& state) {
  ModelState s;
  if (!state.model) return s;
  ModelStateTensors tensors;
  tensors.params = state.model->parameters();
  for (const at::Tensor& p : tensors.params) {
    if (p.grad().defined()) tensors.grads.push_back(p.grad());
  }
  // What the update keeps beyond the parameters (master copies, moments), then the sharding
  // slot's own state (partitions, flat buffers).
  if (state.update) state.update->AddModelState(tensors.params, tensors);
  if (state.sharding != nullptr) state.sharding->AddModelState(tensors);
  s.params_bytes = memory::DistinctStorageBytes(tensors.params);
  // Frozen: the model's parameters without gradients (an adapter's base and state); a sharding
  // slot's partitions are the trainable parameters' storage, whatever their flag.
  std::vector<at::Tensor> frozen;
  for (const at::Tensor& p : state.model->Parameters()) {
    if (!p.requires_grad()) frozen.push_back(p);
  }
  s.trainable_params_bytes = s.params_bytes - memory::DistinctStorageBytes(frozen);
  s.grads_bytes = memory::DistinctStorageBytes(tensors.grads);
  s.optimizer_bytes = memory::DistinctStorageBytes(tensors.optimizer);
  return s;
}

// The dtype as results name it (docs/results.md): "float32", "bfloat16", "float16", ...
std::string ComputeDtypeName(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::Double: return "float64";
    default: return c10::toString(dtype);
  }
}

// The sum over ranks of a figure every rank computed for its own share (no-op on one process).
double SumOverRanks(Communicator* comm, double value) {
  if (comm == nullptr) return value;
  at::Tensor t = at::full({1}, value, at::kDouble);
  comm->AllReduceSum(t);
  return t.item<double>();
}

std::string WithoutBacktrace(const c10::Error& error) {
  return error.what_without_backtrace();
}

// A stage boundary: the memory probe measures it, the strategies' hooks run inside it.
class StageMarks {
 public:
  StageMarks(MemoryProbe& probe, const StrategyHooks& hooks, RunContext& context)
      : probe_(probe), hooks_(hooks), context_(context) {}
  void Begin(Stage stage, int64_t step) {
    context_.step = step;
    const bool per_micro_batch = stage == Stage::kForward || stage == Stage::kBackward;
    probe_.Begin(stage, step, per_micro_batch ? context_.micro_batch : -1);
    hooks_.Begin(stage, context_);
    stage_ = stage;
  }
  void End() {
    hooks_.End(stage_, context_);
    probe_.End();
  }

 private:
  MemoryProbe& probe_;
  const StrategyHooks& hooks_;
  RunContext& context_;
  Stage stage_ = Stage::kEnvironment;
};

// Moves a micro-batch's tensors to the run's device (a no-op on the CPU).
void MoveToDevice(data::Batch& batch, const c10::Device& device) {
  if (device.is_cpu()) return;
  for (at::Tensor* t : {&batch.input_ids, &batch.targets, &batch.position_ids, &batch.segment_ids}) {
    if (t->defined()) *t = t->to(device);
  }
}

// The run's stages in order, each a short method that opens with what the slots do there. One
// object holds what the stages share: the config, the strategies (looked up by slot), the
// RunContext the plugins see, the memory probe and the result being filled.
class RunLoop {
 public:
  RunLoop(const config::RunConfig& cfg, const StrategySet& strategies, RunState& state,
          MemoryProbe& probe, RunResult& result, const StepCallback& on_step, Communicator* comm,
          HostPool* host_pool, memory::DeviceMeter& meter)
      : cfg_(cfg),
        hooks_(strategies),
        state_(state),
        probe_(probe),
        result_(result),
        on_step_(on_step),
        comm_(comm),
        device_(meter.Device()),
        rank_(comm != nullptr ? comm->Rank() : 0),
        world_(comm != nullptr ? comm->WorldSize() : 1),
        stages_(probe, hooks_, context_) {
    context_.comm = comm;
    context_.seed = cfg.experiment.seed;
    context_.host_pool = host_pool;
    context_.device = device_;
    context_.device_memory = &meter;
    // Figures recorded in a stage or step count once it has completed (Commit): a run that
    // fails keeps the figures of what completed, as its per-step rows do (docs/results.md).
    context_.record = [this](const std::string& name, double value) {
      uncommitted_[name] += value;
    };
    context_.record_step = [this](const std::string& name, double value) {
      if (current_step_ != nullptr) current_step_->metrics[name] = value;
    };
  }

  void Run() {
    Environment();
    Commit();
    Model();
    Commit();
    Data();
    Commit();
    Optimizer();
    Commit();
    StepTimer timer(device_);
    for (int64_t step = 0; step < cfg_.experiment.steps; ++step) {
      Step(step, timer);
      Commit();
    }
    stages_.Begin(Stage::kRunEnd, cfg_.experiment.steps);
    stages_.End();
    Commit();
  }

 private:
  // environment: on the CPU the allocator slot's memory backend serves every tensor from here
  // on; on CUDA its settings were applied before CUDA initialised (Trainer::Run).
  void Environment() {
    stages_.Begin(Stage::kEnvironment, -1);
    if (device_.is_cpu() || device_.is_meta()) {
      AllocatorStrategy* allocator = nullptr;
      const ActiveStrategy* allocator_plugin = nullptr;
      std::tie(allocator, allocator_plugin) = hooks_.Get<AllocatorStrategy>(Slot::kAllocator);
      memory::TrackingAllocator::Instance().SetBackend(
          CallPlugin(*allocator_plugin, "environment (memory backend)",
                     [&] { return allocator->MakeBackend(); }));
    }
    result_.environment = env::DescribeEnvironment(device_);
    stages_.End();
  }

  // Builds the model group by group — the embedding, each decoder block, the final norm and LM
  // head — each initialised on the CPU from the seed (or loaded from [model] weights), moved to
  // the device (the same weights on every device), and handed to the strategies
  // (OnParametersBuilt: precision converts it, ZeRO partitions it; a sharding slot that adopts
  // by group takes its master copies) before the next group exists, so the whole model is never
  // held twice.
  void BuildModel() {
    memory::AllocationLabel label("parameters");
    // On the meta device (an estimate) parameters are shapes: nothing is drawn or loaded, and
    // the weights' values change no byte.
    const model::ScopedParameterDevice parameter_device(device_.is_meta() ? c10::kMeta : c10::kCPU);
    torch::manual_seed(cfg_.experiment.seed);
    state_.model = model::LlamaModel(cfg_.model.llama, model::Construction::kDeferred);
    context_.model = state_.model.get();
    std::optional<model::SafetensorsSet> weights;
    if (!cfg_.model.weights.empty() && !device_.is_meta()) {
      weights = model::OpenSafetensors(cfg_.model.weights);
    }
    std::tie(sharding_, sharding_plugin_) = hooks_.Get<ShardingStrategy>(Slot::kSharding);
    AdapterStrategy* adapter = nullptr;
    const ActiveStrategy* adapter_plugin = nullptr;
    std::tie(adapter, adapter_plugin) = hooks_.Get<AdapterStrategy>(Slot::kAdapter);
    PrecisionStrategy* precision = nullptr;
    const ActiveStrategy* precision_plugin = nullptr;
    std::tie(precision, precision_plugin) = hooks_.Get<PrecisionStrategy>(Slot::kPrecision);
    adopted_by_group_ = CallPlugin(*sharding_plugin_, "model", [&] {
      return sharding_->OwnsOptimizerStep() && sharding_->AdoptsOptimizerParametersByGroup();
    });
    for (size_t group = 0; group < state_.model->BuildGroupCount(); ++group) {
      std::vector<at::Tensor> built = state_.model->BuildGroup(group);
      if (weights) model::LoadWeights(*state_.model, *weights, &built);
      for (at::Tensor& p : built) {
        if (!device_.is_cpu() && !p.is_meta()) {
          torch::NoGradGuard no_grad;
          p.set_data(p.to(device_));
        }
      }
      // The adapter slot first: it freezes parameters and adds its own tensors to the group,
      // which the other strategies then see as built like the rest.
      const std::vector<AdapterTensor> added = CallPlugin(
          *adapter_plugin, "model", [&] { return adapter->AdaptGroup(IndicesOf(built), context_); });
      state_.model->AddGroupTensors(group, added);
      for (const AdapterTensor& t : added) {
        built.push_back(t.tensor);
        if (t.tensor.requires_grad()) adapter_trainable_ += t.tensor.numel();
      }
      const std::vector<size_t> indices = IndicesOf(built);
      hooks_.ParametersBuilt(indices, context_);
      if (!adopted_by_group_) continue;
      // Only what trains is handed over: a frozen parameter has no master copy and no update.
      std::vector<at::Tensor> trainable;
      for (const at::Tensor& p : built) {
        if (p.requires_grad()) trainable.push_back(p);
      }
      if (trainable.empty()) continue;
      const std::vector<size_t> trainable_indices = IndicesOf(trainable);
      std::vector<at::Tensor> updated = CallPlugin(*precision_plugin, "model", [&] {
        return precision->HandOverOptimizerParameters(trainable);
      });
      CallPlugin(*sharding_plugin_, "model", [&] {
        sharding_->AdoptGroupOptimizerParameters(context_, trainable_indices, std::move(updated));
      });
    }
  }

  // Where `tensors` are in the model's Parameters() (which grows as an adapter adds tensors).
  std::vector<size_t> IndicesOf(const std::vector<at::Tensor>& tensors) const {
    const std::vector<at::Tensor> parameters = state_.model->Parameters();
    std::vector<size_t> indices;
    for (const at::Tensor& p : tensors) {
      for (size_t i = 0; i < parameters.size(); ++i) {
        if (parameters[i].is_same(p)) indices.push_back(i);
      }
    }
    return indices;
  }

  // model: attention, the kernels and block execution come from their slots; the sharding slot wraps the
  // checkpointing slot's block runner (ZeRO-3 gathers around it).
  void Model() {
    stages_.Begin(Stage::kModel, -1);
    BuildModel();
    AttentionStrategy* attention = nullptr;
    const ActiveStrategy* attention_plugin = nullptr;
    std::tie(attention, attention_plugin) = hooks_.Get<AttentionStrategy>(Slot::kAttention);
    model::AttentionFn attend =
        CallPlugin(*attention_plugin, "model", [&] { return attention->MakeAttention(); });
    const ActiveStrategy* attention_owner = attention_plugin;
    state_.model->SetAttention([attend, attention_owner](const at::Tensor& q, const at::Tensor& k,
                                                         const at::Tensor& v,
                                                         const model::AttentionInputs& inputs) {
      return CallPlugin(*attention_owner, "attention", [&] { return attend(q, k, v, inputs); });
    });
    KernelsStrategy* kernels = nullptr;
    const ActiveStrategy* kernels_plugin = nullptr;
    std::tie(kernels, kernels_plugin) = hooks_.Get<KernelsStrategy>(Slot::kKernels);
    model::Kernels made =
        CallPlugin(*kernels_plugin, "model", [&] { return kernels->MakeKernels(); });
    const ActiveStrategy* kernels_owner = kernels_plugin;
    model::Kernels wrapped;  // a plugin's exception names the plugin, as for attention
    if (made.rms_norm) {
      wrapped.rms_norm = [fn = made.rms_norm, kernels_owner](const at::Tensor& x,
                                                             const at::Tensor& weight, double eps) {
        return CallPlugin(*kernels_owner, "rms_norm", [&] { return fn(x, weight, eps); });
      };
    }
    if (made.swiglu) {
      wrapped.swiglu = [fn = made.swiglu, kernels_owner](const at::Tensor& gate,
                                                         const at::Tensor& up) {
        return CallPlugin(*kernels_owner, "swiglu", [&] { return fn(gate, up); });
      };
    }
    state_.model->SetKernels(wrapped);
    CheckpointingStrategy* checkpointing = nullptr;
    const ActiveStrategy* checkpointing_plugin = nullptr;
    std::tie(checkpointing, checkpointing_plugin) = hooks_.Get<CheckpointingStrategy>(Slot::kCheckpointing);
    model::BlockRunner runner = CallPlugin(*checkpointing_plugin, "model",
                                           [&] { return checkpointing->MakeBlockRunner(); });
    state_.model->SetBlockRunner(CallPlugin(*sharding_plugin_, "model", [&] {
      return sharding_->WrapBlockRunner(std::move(runner));
    }));
    LossStrategy* loss = nullptr;
    const ActiveStrategy* loss_plugin = nullptr;
    std::tie(loss, loss_plugin) = hooks_.Get<LossStrategy>(Slot::kLoss);
    model::LossFn loss_fn = CallPlugin(*loss_plugin, "model", [&] { return loss->MakeLoss(); });
    const ActiveStrategy* loss_owner = loss_plugin;
    loss_ = [loss_fn, loss_owner](const model::LossInputs& inputs) {
      return CallPlugin(*loss_owner, "forward", [&] { return loss_fn(inputs); });
    };
    stages_.End();
  }

  // data: the micro-batches' shape, as the batching slot configured it when the cell was
  // validated (config::ValidateRun); the packing slot fills them.
  void Data() {
    stages_.Begin(Stage::kData, -1);
    state_.data = cfg_.data;
    result_.data = state_.data;
    PackingStrategy* packing = nullptr;
    const ActiveStrategy* packing_plugin = nullptr;
    std::tie(packing, packing_plugin) = hooks_.Get<PackingStrategy>(Slot::kPacking);
    state_.batches = CallPlugin(*packing_plugin, "data", [&] {
      return packing->MakeBatchSource(state_.data, cfg_.experiment.seed);
    });
    stages_.End();
  }

  // optimizer: the optimizer slot's update over the tensors the precision slot names (the
  // parameters, or master copies of them) — unless the sharding slot owns the step and keeps
  // (its share of) the state itself, taking the precision slot's tensors over.
  void Optimizer() {
    stages_.Begin(Stage::kOptimizer, -1);
    const config::OptimizerSection& o = cfg_.optimizer;
    state_.sharding = sharding_;
    sharded_step_ = CallPlugin(*sharding_plugin_, "optimizer",
                               [&] { return sharding_->OwnsOptimizerStep(); });
    PrecisionStrategy* precision = nullptr;
    const ActiveStrategy* precision_plugin = nullptr;
    std::tie(precision, precision_plugin) = hooks_.Get<PrecisionStrategy>(Slot::kPrecision);
    if (sharded_step_) {
      // The precision slot's master copies (if any) move to the sharding slot, which keeps its
      // partition of them; the full copies are freed when this scope ends. (A sharding slot
      // that adopts by group took them in the model stage.)
      if (!adopted_by_group_) {
        std::vector<at::Tensor> updated = CallPlugin(*precision_plugin, "optimizer", [&] {
          return precision->HandOverOptimizerParameters(TrainableParameters());
        });
        CallPlugin(*sharding_plugin_, "optimizer",
                   [&] { sharding_->AdoptOptimizerParameters(context_, std::move(updated)); });
      }
      state_.update = MakeShardingSlotUpdate([this](const OptimizerStepSpec& spec) {
        return CallPlugin(*sharding_plugin_, "optimizer_step",
                          [&] { return sharding_->OptimizerStep(context_, spec); });
      });
    } else {
      std::vector<at::Tensor> updated = CallPlugin(*precision_plugin, "optimizer", [&] {
        return precision->OptimizerParameters(TrainableParameters());
      });
      OptimizerStrategy* optimizer = nullptr;
      const ActiveStrategy* optimizer_plugin = nullptr;
      std::tie(optimizer, optimizer_plugin) = hooks_.Get<OptimizerStrategy>(Slot::kOptimizer);
      // The optimizer walks its tensors in Hugging Face's order (what torch.optim gets from
      // model.parameters()); clipping keeps the model's.
      const std::vector<at::Tensor> walked = InHuggingFaceOrder(updated);
      std::unique_ptr<memsweep::Optimizer> made = CallPlugin(
          *optimizer_plugin, "optimizer", [&] { return optimizer->MakeOptimizer(walked); });
      state_.update = MakeHostOptimizerUpdate(std::move(updated), std::move(made), *optimizer_plugin);
    }
    context_.optimizer_parameters = state_.update->UpdatedTensors();
    CountTrainable();
    state_.schedule = LrSchedule{o.lr, o.lr_warmup_steps, cfg_.experiment.steps, o.min_lr_ratio};
    RunState& state = state_;
    probe_.SetModelStateFn([&state] { return MeasureModelState(state); });
    stages_.End();
  }

  // How many parameters train, and what the adapter changes in the FLOPs per token: its
  // trainable tensors run three products each (forward, input and weight gradients), a frozen
  // GEMM weight two (no weight gradient).
  void CountTrainable() {
    int64_t trainable = 0;
    for (const at::Tensor& p : TrainableParameters()) trainable += p.numel();
    result_.summary.trainable_params = trainable;
    int64_t frozen_matmul = 0;
    for (const model::LinearLayer* layer : state_.model->Linears()) {
      if (!layer->weight.requires_grad()) {
        frozen_matmul += layer->shape.in_features * layer->shape.out_features;
      }
    }
    result_.summary.flops_per_token_adjustment =
        6.0 * static_cast<double>(adapter_trainable_) - 2.0 * static_cast<double>(frozen_matmul);
  }

  // `updated` (one tensor per trainable parameter, in TrainableParameters()' order) in the
  // order Hugging Face's model.parameters() lists their parameters.
  std::vector<at::Tensor> InHuggingFaceOrder(const std::vector<at::Tensor>& updated) const {
    const std::vector<at::Tensor> parameters = state_.model->Parameters();
    std::vector<int64_t> trainable_position(parameters.size(), -1);
    int64_t position = 0;
    for (size_t i = 0; i < parameters.size(); ++i) {
      if (parameters[i].requires_grad()) trainable_position[i] = position++;
    }
    std::vector<at::Tensor> ordered;
    for (size_t i : model::HuggingFaceParameterOrder(*state_.model)) {
      if (trainable_position[i] >= 0) ordered.push_back(updated.at(trainable_position[i]));
    }
    return ordered;
  }

  // The parameters that train (an adapter freezes the others): what the optimizer updates.
  std::vector<at::Tensor> TrainableParameters() const {
    std::vector<at::Tensor> trainable;
    for (const at::Tensor& p : state_.model->Parameters()) {
      if (p.requires_grad()) trainable.push_back(p);
    }
    return trainable;
  }

  // One optimizer step: its micro-batches, forward and backward for each, the update, the
  // step's record.
  void Step(int64_t step, StepTimer& timer) {
    timer.Start();
    probe_.ResetStepPeak();
    StepRecord record;
    record.step = step;
    current_step_ = &record;
    context_.skip_optimizer_step = false;
    context_.grad_norm = std::numeric_limits<double>::quiet_NaN();
    std::vector<data::Batch> micro_batches = StepBegin(step, record);
    for (size_t i = 0; i < micro_batches.size(); ++i) {
      ForwardAndBackward(step, static_cast<int64_t>(i), micro_batches[i], record);
    }
    context_.micro_batch = -1;
    OptimizerStep(step, record);
    // step_end: gradients released, the step's figures recorded.
    stages_.Begin(Stage::kStepEnd, step);
    if (state_.update) state_.update->ZeroGrad();
    record.loss = SumOverRanks(comm_, record.loss);  // each rank summed its share of the loss
    record.seconds = timer.Stop();
    record.peak_allocated_bytes = probe_.StepPeak();
    record.host_pool_peak_bytes =
        context_.host_pool != nullptr ? context_.host_pool->PeakBytes() : 0;
    current_step_ = nullptr;
    stages_.End();
    // The step counts once its last hook has run: one that throws fails the run at this step.
    result_.steps.push_back(record);
    if (on_step_) on_step_(result_.steps.back());
  }

  // The figures recorded since the last completed stage or step join the run's.
  void Commit() {
    for (const auto& [name, value] : uncommitted_) result_.plugin_metrics[name] += value;
    uncommitted_.clear();
  }

  // step_begin: learning rate and this step's micro-batches. The loss of every micro-batch is
  // divided by the real tokens of the whole step, so accumulation adds up to the full-batch loss.
  // With N ranks the global batch is N x accumulation micro-batches, dealt round-robin: every
  // rank reads them all (same seed, same order) and keeps micro-batches rank, rank + N, ...,
  // so it knows the global token count without communicating.
  std::vector<data::Batch> StepBegin(int64_t step, StepRecord& record) {
    stages_.Begin(Stage::kStepBegin, step);
    record.lr = state_.schedule.At(step);
    std::vector<data::Batch> micro_batches;
    for (int64_t i = 0; i < state_.data.accumulation_steps * world_; ++i) {
      data::Batch batch = state_.batches->Next();
      record.tokens += batch.real_tokens;
      record.positions += batch.positions;
      record.rows += batch.Rows();
      record.longest_row = std::max(record.longest_row, batch.input_ids.size(1));
      if (i % world_ == rank_) {
        MoveToDevice(batch, device_);
        micro_batches.push_back(std::move(batch));
      }
    }
    stages_.End();
    return micro_batches;
  }

  // forward and backward of one micro-batch: the precision slot's hooks cast or scale around
  // them; the batch is released as soon as backward has run.
  void ForwardAndBackward(int64_t step, int64_t index, data::Batch& batch, StepRecord& record) {
    context_.micro_batch = index;
    context_.batch = &batch;
    at::Tensor loss;
    context_.loss = &loss;
    stages_.Begin(Stage::kForward, step);
    {
      const at::Tensor hidden = state_.model->HiddenStates(batch.input_ids, batch.position_ids,
                                                           batch.segment_ids);
      loss = loss_(model::LossInputs{hidden, &state_.model->LmHead(), batch.targets,
                                     static_cast<double>(record.tokens)});
    }
    stages_.End();
    // The loss as computed, before a precision strategy's backward hook may scale it (an
    // estimate's has no value).
    record.loss += device_.is_meta() ? std::numeric_limits<double>::quiet_NaN()
                                     : loss.detach().item<double>();
    stages_.Begin(Stage::kBackward, step);
    loss.backward();
    loss = at::Tensor();
    batch = data::Batch();
    stages_.End();
    context_.batch = nullptr;
    context_.loss = nullptr;
  }

  // optimizer_step: the update — the optimizer slot's after clipping, or the sharding slot's own
  // (one interface: OptimizerUpdate); skipped when a begin hook (fp16's overflow check) said so.
  void OptimizerStep(int64_t step, StepRecord& record) {
    stages_.Begin(Stage::kOptimizerStep, step);
    if (context_.skip_optimizer_step) {
      record.skipped = true;  // the begin hooks found the gradients unusable (fp16 overflow)
      record.grad_norm = std::numeric_limits<double>::quiet_NaN();
      if (!state_.update->Skippable()) {
        throw std::logic_error(
            "a precision strategy skipped this optimizer step, but the sharding slot owns the "
            "step and keeps its own gradients; use sharding \"none\" or \"ddp\" with it");
      }
    } else {
      const config::OptimizerSection& o = cfg_.optimizer;
      // Counts updates, not steps: a skipped step (fp16 overflow) does not advance the
      // optimizer's step, as torch's GradScaler leaves optimizer.step() uncalled.
      const OptimizerStepSpec spec{record.lr,      o.beta1,     o.beta2, o.eps,
                                   o.weight_decay, o.grad_clip, ++updates_};
      record.grad_norm = state_.update->Step(spec);
    }
    context_.grad_norm = record.grad_norm;  // for the end hooks (memsweep/strategy.h)
    stages_.End();
  }

  const config::RunConfig& cfg_;
  const StrategyHooks hooks_;
  RunState& state_;
  MemoryProbe& probe_;
  RunResult& result_;
  const StepCallback& on_step_;
  Communicator* comm_;
  const c10::Device device_;
  const int rank_, world_;
  RunContext context_;
  StageMarks stages_;
  StepRecord* current_step_ = nullptr;  // the step being run, for record_step
  std::map<std::string, double> uncommitted_;  // record()ed in the stage or step running now
  ShardingStrategy* sharding_ = nullptr;
  const ActiveStrategy* sharding_plugin_ = nullptr;
  bool sharded_step_ = false;
  // The sharding slot took the optimizer's tensors group by group in the model stage.
  bool adopted_by_group_ = false;
  int64_t updates_ = 0;            // optimizer updates applied (OptimizerStepSpec::step)
  int64_t adapter_trainable_ = 0;  // elements of the adapter's trainable tensors
  model::LossFn loss_;  // the loss slot's, set in the model stage
};

}  // namespace

const char* RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kOk: return "ok";
    case RunStatus::kOom: return "oom";
    case RunStatus::kFailed: return "failed";
  }
  return "failed";
}

Trainer::Trainer(config::RunConfig config, StrategySet strategies)
    : config_(std::move(config)), strategies_(std::move(strategies)) {}

c10::Device Trainer::RunDevice() const {
  if (config_.device.type == "meta") return c10::Device(c10::kMeta);  // memsweep estimate
  if (config_.device.type != "cuda") return c10::Device(c10::kCPU);
  const int index = device_index_ >= 0 ? device_index_ : config_.device.index;
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

namespace {

// The first check: this process is one of device.world_size ranks. Before anything is measured.
bool CheckWorldSize(const config::RunConfig& config, dist::CountingCommunicator* comm,
                    RunResult& result) {
  if (comm != nullptr) {
    result.dist.rank = comm->Rank();
    result.dist.world_size = comm->WorldSize();
  }
  const int ranks = comm != nullptr ? comm->WorldSize() : 1;
  if (ranks == config.device.world_size) return true;
  result.status = RunStatus::kFailed;
  result.error = "device.world_size = " + std::to_string(config.device.world_size) +
                 " but this process is one of " + std::to_string(ranks) +
                 " ranks (run it through `memsweep run`, torchrun or srun with WORLD_SIZE set)";
  return false;
}

// What the run needs of its plugins before the device is touched: each one's metadata (what
// loss-equivalence verification needs, docs/results.md), the compute dtype, and on CUDA the
// allocator's settings. False, with the result failed, when a plugin throws.
struct PluginFacts {
  c10::ScalarType compute_dtype = at::kFloat;
  std::string allocator_settings;
};
bool ReadPluginFacts(const StrategySet& strategies, const c10::Device& device, PluginFacts& facts,
                     RunResult& result) {
  try {
    for (const auto& active : strategies) {
      const bool preserving =
          CallPlugin(active, "MathPreserving", [&] { return active.impl->MathPreserving(); });
      result.plugins.push_back({active.slot, active.name, active.version, preserving});
    }
    const StrategyHooks hooks(strategies);
    PrecisionStrategy* precision = nullptr;
    const ActiveStrategy* precision_plugin = nullptr;
    std::tie(precision, precision_plugin) = hooks.Get<PrecisionStrategy>(Slot::kPrecision);
    facts.compute_dtype = CallPlugin(*precision_plugin, "environment",
                                     [&] { return precision->ComputeDtype(); });
    result.compute_dtype = ComputeDtypeName(facts.compute_dtype);
    if (device.is_cuda()) {
      AllocatorStrategy* allocator = nullptr;
      const ActiveStrategy* allocator_plugin = nullptr;
      std::tie(allocator, allocator_plugin) = hooks.Get<AllocatorStrategy>(Slot::kAllocator);
      facts.allocator_settings = CallPlugin(*allocator_plugin, "environment (allocator settings)",
                                            [&] { return allocator->DeviceAllocatorSettings(); });
    }
    return true;
  } catch (const PluginError& e) {
    result.status = RunStatus::kFailed;
    result.error = e.what();
    return false;
  }
}

// The device as the run finds it: on CUDA the allocator's settings before anything touches the
// device, then the GPU made current for the whole run (its caching allocator is the one
// measured); on the CPU the GEMM paths; then the GEMM calibration (it measures the machine, not
// the run, so it runs outside the budget and before the run's accounting starts). The CPU GEMM
// paths and the current device are restored when the session ends.
struct DeviceSession {
  std::unique_ptr<memory::DeviceMeter> meter;
  std::optional<c10::DeviceGuard> guard;
  env::ScopedCpuGemmPaths restore_gemm_paths;
};
bool SetUpDevice(const config::RunConfig& config, const c10::Device& device,
                 const PluginFacts& facts, DeviceSession& session, RunResult& result) {
  try {
    if (!facts.allocator_settings.empty()) {
      c10::CachingAllocator::setAllocatorSettings(facts.allocator_settings);
    }
    result.device.allocator_settings = facts.allocator_settings;
    if (device.is_cuda()) session.guard.emplace(device);
    // bf16 products on the CPU: LibTorch's kernels or the upcast ones (env/cpu_gemm.h), chosen
    // before the calibration so that the bf16 peak is the one the run gets — in every run, not
    // only those that compute in bf16: an fp32 run reaches bf16 products too where an adapter
    // keeps its frozen base in bf16 or QLoRA multiplies in bf16 (the upcast kernels leave every
    // other dtype to LibTorch, so fp32 products are unchanged). fp32 products likewise (oneDNN
    // or MKL): every dtype's run has fp32 products (the loss, and bf16's upcast path multiplies
    // through them).
    if (device.is_cpu()) {
      env::UseFp32Gemm(env::ChooseFp32Gemm(config.device.fp32_gemm));
      env::UseBf16Gemm(env::ChooseBf16Gemm(config.device.gemm));
    }
    if (device.is_meta()) memory::InstallMetaTracking();
    session.meter = memory::MakeDeviceMeter(device);
    // An estimate computes nothing: no GEMM peak, no MFU.
    result.summary.peak_flops =
        device.is_meta() ? 0.0 : env::CachedGemmPeakFlops(facts.compute_dtype, device);
    session.meter->EmptyCache();  // the calibration's blocks are not the run's
    session.meter->ClearLastOom();
    result.device.device_total_bytes = env::DeviceTotalBytes(device);
    return true;
  } catch (const std::exception& e) {
    result.status = RunStatus::kFailed;
    result.error = std::string("setting up ") + device.str() + ": " + e.what();
    return false;
  }
}

// Offloaded state lives in host memory the device accounting does not count: pinned on CUDA
// (asynchronous copies), malloc'ed on the CPU, counted only on meta.
std::unique_ptr<HostPool> MakeHostPool(const c10::Device& device) {
  if (device.is_cuda()) return std::make_unique<memory::PinnedHostPool>();
  if (device.is_meta()) return std::make_unique<memory::MetaHostPool>();  // the estimate
  return std::make_unique<memory::MallocHostPool>();
}

}  // namespace

RunResult Trainer::Run() {
  RunResult result;
  auto& tracker = memory::TrackingAllocator::Instance();
  tracker.ClearLastOom();
  const auto start = Clock::now();
  const c10::Device device = RunDevice();
  result.device.device = device.str();
  if (config_.device.emulate) result.device.emulated_gpu = config_.device.emulate->name;
  result.device.budget_bytes = config_.device.memory_budget_bytes.value_or(0);
  if (!CheckWorldSize(config_, comm_, result)) return result;
  env::SetThreads(config_.device.threads);  // before the calibration, which measures with them
  PluginFacts facts;
  if (!ReadPluginFacts(strategies_, device, facts, result)) return result;
  DeviceSession session;
  if (!SetUpDevice(config_, device, facts, session, result)) return result;
  memory::DeviceMeter& meter = *session.meter;
  const std::shared_ptr<memory::MemoryBackend> previous_backend = tracker.BackendPtr();
  const std::unique_ptr<HostPool> host_pool = MakeHostPool(device);
  // The tokens/s of a multi-process run are the whole group's, so its MFU divides by the group's
  // peak: the sum of every rank's calibrated GEMM rate (docs/metrics.md, "MFU").
  result.summary.peak_flops = SumOverRanks(comm_, result.summary.peak_flops);
  const dist::CommCounters comm_start = comm_ != nullptr ? comm_->Counters() : dist::CommCounters{};

  // The run, under the budget; its memory is measured from here to probe.Finish().
  {
    BudgetScope budget(meter, config_.device.memory_budget_bytes);
    MemoryProbe probe(meter, result);
    // From the probe's baseline on: replaying the history gives the run's peak.
    if (memory_history_ > 0) meter.StartHistory(memory_history_);
    {
      RunState state;
      try {
        RunLoop(config_, strategies_, state, probe, result, on_step_, comm_, host_pool.get(), meter)
            .Run();
      } catch (const c10::OutOfMemoryError& e) {
        result.status = RunStatus::kOom;
        result.error = WithoutBacktrace(e);
        result.oom = meter.LastOom();
        // Before any optimizer step ended the breakdown has no model state yet: take the one
        // held at the failing request, so that parameters, gradients and optimizer state are
        // not counted as activations.
        if (result.memory.params_bytes == 0) {
          const ModelState held = MeasureModelState(state);
          result.memory.params_bytes = held.params_bytes;
          result.memory.trainable_params_bytes = held.trainable_params_bytes;
          result.memory.frozen_params_bytes = held.params_bytes - held.trainable_params_bytes;
          result.memory.grads_bytes = held.grads_bytes;
          result.memory.optimizer_bytes = held.optimizer_bytes;
        }
      } catch (const c10::Error& e) {
        result.status = RunStatus::kFailed;
        result.error = WithoutBacktrace(e);
      } catch (const std::exception& e) {
        result.status = RunStatus::kFailed;
        result.error = e.what();
      }
      if (state.update) state.update->ZeroGrad();  // an OOM in backward may leave grads
    }  // the model, data and optimizer state are freed here
    try {
      SynchronizeDevice(device);
    } catch (const std::exception&) {
      // A device fault already ended the run; its figures up to here still stand.
    }
    probe.Finish();
    if (memory_history_ > 0) result.memory_snapshot = meter.TakeHistory();
  }

  // Teardown: cached blocks go back to the device, and the next run starts on the previous
  // backend.
  meter.EmptyCache();
  if (device.is_cpu() || device.is_meta()) tracker.SetBackend(previous_backend);
  result.dist.host_pool_peak_bytes = host_pool->PeakBytes();
  if (comm_ != nullptr) {
    const dist::CommCounters comm_end = comm_->Counters();
    result.dist.comm_seconds = comm_end.seconds - comm_start.seconds;
    result.dist.comm_bytes = comm_end.bytes - comm_start.bytes;
    result.dist.comm_calls = comm_end.calls - comm_start.calls;
  }
  // Tokens and rows of a step are the whole group's (every rank reads the global batch).
  FillThroughput(result.steps, config_.experiment.warmup_steps, config_.model.llama,
                 result.summary.peak_flops, result.summary);
  // A run faster than the kept GEMM peak shows the peak was measured low: measured again here
  // (one process only: ranks would have to agree on it), else its MFU is marked (summary.h).
  std::function<double()> remeasure;
  if (comm_ == nullptr && !device.is_meta()) {
    remeasure = [&] {
      return env::RecalibrateGemm(facts.compute_dtype, env::Recalibrate::kIfHigher, device).flops;
    };
  }
  CheckMfuAgainstPeak(result.summary, remeasure);
  result.summary.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace memsweep::train
