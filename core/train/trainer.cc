#include "core/train/trainer.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>
#include <torch/autograd.h>
#include <torch/utils.h>

#include <chrono>
#include <memory>
#include <optional>

#include "core/data/batcher.h"
#include "core/env/environment.h"
#include "core/env/gemm_backend.h"
#include "core/env/gemm_calibration.h"
#include "core/env/threads.h"
#include "core/memory/storage_bytes.h"
#include "core/model/llama.h"
#include "core/train/adamw.h"
#include "core/train/lr_schedule.h"
#include "core/train/memory_probe.h"
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
  std::unique_ptr<data::Batcher> batcher;
  std::unique_ptr<AdamW> optimizer;
  LrSchedule schedule;
};

ModelState MeasureModelState(const RunState& state) {
  ModelState s;
  if (!state.model) return s;
  const std::vector<at::Tensor> params = state.model->parameters();
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  s.params_bytes = memory::DistinctStorageBytes(params);
  s.grads_bytes = memory::DistinctStorageBytes(grads);
  if (state.optimizer) s.optimizer_bytes = memory::DistinctStorageBytes(state.optimizer->StateTensors());
  return s;
}

std::string WithoutBacktrace(const c10::Error& error) {
  return error.what_without_backtrace();
}

void RunStages(const config::RunConfig& cfg, RunState& state, MemoryProbe& probe,
               RunResult& result, const StepCallback& on_step) {
  // environment
  probe.Begin(Stage::kEnvironment, -1);
  result.environment = env::DescribeEnvironment();
  if (env::IsReferenceBlas(result.environment)) {
    spdlog::warn("fp32 GEMM runs on the reference BLAS ({}): training is 30-100x slower. Install "
                 "libopenblas0-openmp or set [device] gemm = \"onednn\".",
                 result.environment.blas_library);
  }
  probe.End();

  // model
  probe.Begin(Stage::kModel, -1);
  torch::manual_seed(cfg.experiment.seed);
  state.model = model::LlamaModel(cfg.model.llama);
  probe.End();

  // data
  probe.Begin(Stage::kData, -1);
  state.batcher = std::make_unique<data::Batcher>(cfg.data, cfg.experiment.seed);
  probe.End();

  // optimizer
  probe.Begin(Stage::kOptimizer, -1);
  const config::OptimizerSection& o = cfg.optimizer;
  state.optimizer = std::make_unique<AdamW>(
      state.model->parameters(),
      AdamWOptions{o.lr, o.beta1, o.beta2, o.eps, o.weight_decay});
  state.schedule = LrSchedule{o.lr, o.lr_warmup_steps, cfg.experiment.steps, o.min_lr_ratio};
  probe.SetModelStateFn([&state] { return MeasureModelState(state); });
  probe.End();

  for (int64_t step = 0; step < cfg.experiment.steps; ++step) {
    const auto step_start = Clock::now();
    probe.ResetStepPeak();
    StepRecord record;
    record.step = step;

    // step_begin: learning rate and this step's micro-batches. The loss of every micro-batch is
    // divided by the real tokens of the whole step, so accumulation adds up to the full-batch loss.
    probe.Begin(Stage::kStepBegin, step);
    record.lr = state.schedule.At(step);
    state.optimizer->SetLearningRate(record.lr);
    std::vector<data::Batch> micro_batches;
    for (int64_t i = 0; i < cfg.data.accumulation_steps; ++i) {
      micro_batches.push_back(state.batcher->Next());
      record.tokens += micro_batches.back().real_tokens;
      record.positions += micro_batches.back().positions;
    }
    probe.End();

    for (data::Batch& batch : micro_batches) {
      probe.Begin(Stage::kForward, step);
      at::Tensor logits = state.model->forward(batch.input_ids, batch.position_ids);
      at::Tensor loss = model::NextTokenLoss(logits, batch.targets, record.tokens);
      logits = at::Tensor();
      probe.End();

      probe.Begin(Stage::kBackward, step);
      loss.backward();
      record.loss += loss.item<double>();
      loss = at::Tensor();
      batch = data::Batch();
      probe.End();
    }

    probe.Begin(Stage::kOptimizerStep, step);
    record.grad_norm = ClipGradNorm(state.optimizer->Parameters(), cfg.optimizer.grad_clip);
    state.optimizer->Step();
    probe.End();

    probe.Begin(Stage::kStepEnd, step);
    state.optimizer->ZeroGrad();
    record.seconds = std::chrono::duration<double>(Clock::now() - step_start).count();
    record.peak_allocated_bytes = probe.StepPeak();
    result.steps.push_back(record);
    if (on_step) on_step(record);
    probe.End();
  }
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

Trainer::Trainer(config::RunConfig config) : config_(std::move(config)) {}

RunResult Trainer::Run() {
  RunResult result;
  auto& tracker = memory::TrackingAllocator::Instance();
  tracker.ClearLastOom();
  const auto start = Clock::now();
  // Threads and the GEMM path first, then the calibration: it measures the machine, not the run,
  // so it runs outside the budget and before the run's memory accounting starts.
  env::SetThreads(config_.device.threads);
  env::SetGemmBackend(config_.device.gemm);
  result.summary.peak_flops = env::CachedGemmPeakFlops(at::kFloat);
  {
    BudgetScope budget(tracker, config_.device.memory_budget_bytes);
    MemoryProbe probe(tracker, result);
    {
      RunState state;
      try {
        RunStages(config_, state, probe, result, on_step_);
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

    probe.Begin(Stage::kRunEnd, static_cast<int64_t>(result.steps.size()));
    probe.End();
    probe.Finish();
  }
  FillThroughput(result.steps, config_.experiment.warmup_steps, config_.data.micro_batch_size *
                 config_.data.accumulation_steps, config_.model.llama, result.summary.peak_flops,
                 result.summary);
  result.summary.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace memsweep::train
