#include "core/train/trainer.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>
#include <torch/autograd.h>
#include <torch/utils.h>

#include <chrono>
#include <memory>
#include <optional>

#include "core/env/environment.h"
#include "core/env/gemm_backend.h"
#include "core/env/gemm_calibration.h"
#include "core/env/threads.h"
#include "core/memory/storage_bytes.h"
#include "core/model/llama.h"
#include "core/train/adamw.h"
#include "core/train/lr_schedule.h"
#include "core/train/memory_probe.h"
#include "core/train/strategy_hooks.h"
#include "core/train/summary.h"

namespace memsweep::train {
namespace {

using Clock = std::chrono::steady_clock;

// Restores the allocator's budget and stage label when a run ends, however it ends.
class BudgetScope {
 public:
  BudgetScope(memory::TrackingAllocator& tracker, std::optional<int64_t> budget)
      : tracker_(tracker), previous_(tracker.Budget()) {
    tracker_.SetBudget(budget);
  }
  ~BudgetScope() {
    tracker_.SetBudget(previous_);
    tracker_.SetStage("idle");
  }

 private:
  memory::TrackingAllocator& tracker_;
  std::optional<int64_t> previous_;
};

// Everything a run allocates lives here, so that leaving Run() frees it all.
struct RunState {
  model::LlamaModel model{nullptr};
  std::unique_ptr<data::BatchSource> batches;
  std::unique_ptr<AdamW> optimizer;
  LrSchedule schedule;
  data::DataConfig data;  // as the batching strategy configured it
};

ModelState MeasureModelState(const RunState& state) {
  ModelState s;
  if (!state.model) return s;
  const std::vector<at::Tensor> params = state.model->parameters();
  // The optimizer may update tensors other than the parameters (a precision strategy's fp32
  // master weights): those count as optimizer state, their gradients as gradients. When it
  // updates the parameters themselves (fp32), every shared storage is counted once.
  const std::vector<at::Tensor> updated =
      state.optimizer ? state.optimizer->Parameters() : std::vector<at::Tensor>();
  std::vector<at::Tensor> grads;
  for (const std::vector<at::Tensor>* group : {&params, &updated}) {
    for (const at::Tensor& p : *group) {
      if (p.grad().defined()) grads.push_back(p.grad());
    }
  }
  s.params_bytes = memory::DistinctStorageBytes(params);
  s.grads_bytes = memory::DistinctStorageBytes(grads);
  if (state.optimizer) {
    std::vector<at::Tensor> held = params;
    held.insert(held.end(), updated.begin(), updated.end());
    const std::vector<at::Tensor> optimizer_state = state.optimizer->StateTensors();
    held.insert(held.end(), optimizer_state.begin(), optimizer_state.end());
    s.optimizer_bytes = memory::DistinctStorageBytes(held) - s.params_bytes;
  }
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
    probe_.Begin(stage, step);
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

void RunStages(const config::RunConfig& cfg, const StrategySet& strategies, RunState& state,
               MemoryProbe& probe, RunResult& result, const StepCallback& on_step) {
  const StrategyHooks hooks(strategies);
  RunContext context;
  context.config = &cfg;
  context.tracker = &memory::TrackingAllocator::Instance();
  context.record = [&result](const std::string& name, double value) {
    result.plugin_metrics[name] += value;
  };
  StageMarks stages(probe, hooks, context);

  // environment: the allocator slot's memory backend serves every tensor from here on.
  stages.Begin(Stage::kEnvironment, -1);
  auto [allocator, allocator_plugin] = hooks.Get<AllocatorStrategy>("allocator");
  context.tracker->SetBackend(CallPlugin(*allocator_plugin, "environment (memory backend)",
                                         [&] { return allocator->MakeBackend(); }));
  result.environment = env::DescribeEnvironment();
  if (env::IsReferenceBlas(result.environment)) {
    spdlog::warn("fp32 GEMM runs on the reference BLAS ({}): training is 30-100x slower. Install "
                 "libopenblas0-openmp or set [device] gemm = \"onednn\".",
                 result.environment.blas_library);
  }
  stages.End();

  // model: attention and block execution come from their slots.
  stages.Begin(Stage::kModel, -1);
  torch::manual_seed(cfg.experiment.seed);
  state.model = model::LlamaModel(cfg.model.llama);
  context.model = state.model.get();
  auto [attention, attention_plugin] = hooks.Get<AttentionStrategy>("attention");
  model::AttentionFn attend =
      CallPlugin(*attention_plugin, "model", [&] { return attention->MakeAttention(); });
  const ActiveStrategy* attention_owner = attention_plugin;
  state.model->SetAttention([attend, attention_owner](const at::Tensor& q, const at::Tensor& k,
                                                      const at::Tensor& v,
                                                      const model::AttentionInputs& inputs) {
    return CallPlugin(*attention_owner, "attention", [&] { return attend(q, k, v, inputs); });
  });
  auto [checkpointing, checkpointing_plugin] = hooks.Get<CheckpointingStrategy>("checkpointing");
  state.model->SetBlockRunner(CallPlugin(*checkpointing_plugin, "model",
                                         [&] { return checkpointing->MakeBlockRunner(); }));
  stages.End();

  // data: the batching slot shapes the micro-batches, the packing slot fills them.
  stages.Begin(Stage::kData, -1);
  state.data = cfg.data;
  auto [batching, batching_plugin] = hooks.Get<BatchingStrategy>("batching");
  CallPlugin(*batching_plugin, "data", [&] { batching->ConfigureBatches(state.data); });
  result.data = state.data;
  auto [packing, packing_plugin] = hooks.Get<PackingStrategy>("packing");
  state.batches = CallPlugin(*packing_plugin, "data", [&] {
    return packing->MakeBatchSource(state.data, cfg.experiment.seed);
  });
  stages.End();

  // optimizer: AdamW over the tensors the precision slot names (the parameters, or master
  // copies of them).
  stages.Begin(Stage::kOptimizer, -1);
  const config::OptimizerSection& o = cfg.optimizer;
  auto [precision, precision_plugin] = hooks.Get<PrecisionStrategy>("precision");
  std::vector<at::Tensor> updated = CallPlugin(*precision_plugin, "optimizer", [&] {
    return precision->OptimizerParameters(state.model->parameters());
  });
  state.optimizer = std::make_unique<AdamW>(
      std::move(updated), AdamWOptions{o.lr, o.beta1, o.beta2, o.eps, o.weight_decay});
  context.optimizer = state.optimizer.get();
  state.schedule = LrSchedule{o.lr, o.lr_warmup_steps, cfg.experiment.steps, o.min_lr_ratio};
  probe.SetModelStateFn([&state] { return MeasureModelState(state); });
  stages.End();

  for (int64_t step = 0; step < cfg.experiment.steps; ++step) {
    const auto step_start = Clock::now();
    probe.ResetStepPeak();
    StepRecord record;
    record.step = step;

    // step_begin: learning rate and this step's micro-batches. The loss of every micro-batch is
    // divided by the real tokens of the whole step, so accumulation adds up to the full-batch loss.
    stages.Begin(Stage::kStepBegin, step);
    record.lr = state.schedule.At(step);
    state.optimizer->SetLearningRate(record.lr);
    std::vector<data::Batch> micro_batches;
    for (int64_t i = 0; i < state.data.accumulation_steps; ++i) {
      micro_batches.push_back(state.batches->Next());
      record.tokens += micro_batches.back().real_tokens;
      record.positions += micro_batches.back().positions;
      record.rows += micro_batches.back().Rows();
    }
    stages.End();

    for (size_t i = 0; i < micro_batches.size(); ++i) {
      data::Batch& batch = micro_batches[i];
      context.micro_batch = static_cast<int64_t>(i);
      context.batch = &batch;
      at::Tensor loss;
      context.loss = &loss;

      stages.Begin(Stage::kForward, step);
      {
        at::Tensor logits = state.model->forward(batch.input_ids, batch.position_ids,
                                                 batch.segment_ids);
        loss = model::NextTokenLoss(logits, batch.targets, record.tokens);
      }
      stages.End();

      stages.Begin(Stage::kBackward, step);
      loss.backward();
      record.loss += loss.item<double>();
      loss = at::Tensor();
      batch = data::Batch();
      stages.End();
      context.batch = nullptr;
      context.loss = nullptr;
    }
    context.micro_batch = -1;

    stages.Begin(Stage::kOptimizerStep, step);
    record.grad_norm = ClipGradNorm(state.optimizer->Parameters(), cfg.optimizer.grad_clip);
    state.optimizer->Step();
    stages.End();

    stages.Begin(Stage::kStepEnd, step);
    state.optimizer->ZeroGrad();
    record.seconds = std::chrono::duration<double>(Clock::now() - step_start).count();
    record.peak_allocated_bytes = probe.StepPeak();
    result.steps.push_back(record);
    if (on_step) on_step(record);
    stages.End();
  }

  stages.Begin(Stage::kRunEnd, cfg.experiment.steps);
  stages.End();
}

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

RunResult Trainer::Run() {
  RunResult result;
  auto& tracker = memory::TrackingAllocator::Instance();
  tracker.ClearLastOom();
  const auto start = Clock::now();
  // Threads and the GEMM path first, then the calibration: it measures the machine, not the run,
  // so it runs outside the budget and before the run's memory accounting starts.
  env::SetThreads(config_.device.threads);
  env::SetGemmBackend(config_.device.gemm);
  c10::ScalarType compute_dtype = at::kFloat;
  try {
    // What loss-equivalence verification needs to know of each plugin (docs/results.md).
    for (const auto& active : strategies_) {
      const bool preserving =
          CallPlugin(active, "MathPreserving", [&] { return active.impl->MathPreserving(); });
      result.plugins.push_back({active.slot, active.name, active.version, preserving});
    }
    auto [precision, precision_plugin] = StrategyHooks(strategies_).Get<PrecisionStrategy>("precision");
    compute_dtype = CallPlugin(*precision_plugin, "environment",
                               [&] { return precision->ComputeDtype(); });
    result.compute_dtype = ComputeDtypeName(compute_dtype);
  } catch (const PluginError& e) {
    result.status = RunStatus::kFailed;
    result.error = e.what();
    return result;
  }
  result.summary.peak_flops = env::CachedGemmPeakFlops(compute_dtype);
  const std::shared_ptr<memory::MemoryBackend> previous_backend = tracker.BackendPtr();
  {
    BudgetScope budget(tracker, config_.device.memory_budget_bytes);
    MemoryProbe probe(tracker, result);
    {
      RunState state;
      try {
        RunStages(config_, strategies_, state, probe, result, on_step_);
      } catch (const c10::OutOfMemoryError& e) {
        result.status = RunStatus::kOom;
        result.error = WithoutBacktrace(e);
        result.oom = tracker.LastOom();
      } catch (const c10::Error& e) {
        result.status = RunStatus::kFailed;
        result.error = WithoutBacktrace(e);
      } catch (const std::exception& e) {
        result.status = RunStatus::kFailed;
        result.error = e.what();
      }
      if (state.optimizer) state.optimizer->ZeroGrad();  // an OOM in backward may leave grads
    }  // the model, data and optimizer state are freed here
    probe.Finish();
  }
  // Cached blocks go back to the device, and the next run starts on the previous backend.
  tracker.EmptyCache();
  tracker.SetBackend(previous_backend);
  FillThroughput(result.steps, config_.experiment.warmup_steps, config_.model.llama,
                 result.summary.peak_flops, result.summary);
  result.summary.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace memsweep::train
