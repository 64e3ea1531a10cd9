// RunResult: everything one training run measured. Each figure is defined in docs/metrics.md.
// Byte figures are relative to the bytes already allocated when the run started (the baseline),
// so they describe the run itself.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "memsweep/data_config.h"
#include "core/env/environment.h"
#include "core/memory/tracking_allocator.h"

namespace memsweep::train {

enum class RunStatus : uint8_t { kOk, kOom, kFailed };
const char* RunStatusName(RunStatus status);  // "ok", "oom", "failed"

struct StepRecord {
  int64_t step = 0;
  double loss = 0.0;            // mean next-token loss over the step's real tokens
  int64_t tokens = 0;           // real (non-padding) target tokens in the step
  int64_t positions = 0;        // positions computed, padding included
  int64_t rows = 0;             // rows (sequences of the model's input) over all micro-batches
  int64_t longest_row = 0;      // positions of the step's longest row (padding included)
  double seconds = 0.0;         // wall time of the whole step
  double lr = 0.0;
  double grad_norm = 0.0;       // global L2 norm before clipping
  int64_t peak_allocated_bytes = 0;  // highest allocated bytes during this step
  bool skipped = false;  // the update was skipped (fp16 loss scaling found inf/NaN gradients)
  // The host pool's peak so far (offloaded state): for the worker's progress lines, which a
  // runner reads back when the worker is killed; not stored per step.
  int64_t host_pool_peak_bytes = 0;
  std::map<std::string, double> metrics;  // RunContext::record_step figures (loss scale ...)
};

struct TimelinePoint {
  int64_t step = -1;  // -1 for the set-up stages
  const char* stage = "";
  double seconds = 0.0;          // since the run started
  int64_t allocated_bytes = 0;   // at the end of the stage
  int64_t reserved_bytes = 0;
  int64_t peak_bytes = 0;        // highest allocated bytes within the stage
};

// Peak memory of one phase of the step, and the part of it that is not model state.
struct PhaseMemory {
  const char* phase = "";
  int64_t peak_bytes = 0;
  int64_t model_state_bytes = 0;  // parameters + gradients + optimizer state held in the phase
  int64_t activations_bytes = 0;  // peak_bytes - model_state_bytes
};

struct MemoryBreakdown {
  int64_t baseline_bytes = 0;         // allocated before the run (absolute)
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t peak_rss_bytes = 0;         // process VmHWM (absolute: includes the program itself)
  int64_t params_bytes = 0;
  int64_t trainable_params_bytes = 0;  // of params_bytes: parameters with gradients
  int64_t frozen_params_bytes = 0;     // of params_bytes: frozen (an adapter's base)
  int64_t grads_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t activations_bytes = 0;      // peak_allocated - params - grads - optimizer
  int64_t saved_activations_bytes = 0;  // growth across one forward: what backward keeps
  std::vector<PhaseMemory> phases;    // forward, backward, optimizer_step
  int64_t allocations = 0;
  int64_t peak_active_bytes = 0;      // CUDA: blocks in use incl. split tails; CPU: = allocated
  int64_t alloc_retries = 0;          // CUDA: requests retried after freeing the cache
  // The largest single allocation of the run (on CUDA: the largest block the caching allocator
  // handed out) and where it happened: stage, step, micro-batch (-1 where none applies) and what
  // it was when memsweep knows (an AllocationLabel: "logits", "parameters" ...; "" otherwise).
  int64_t largest_allocation_bytes = 0;
  std::string largest_allocation_stage;
  int64_t largest_allocation_step = -1;
  int64_t largest_allocation_micro_batch = -1;
  std::string largest_allocation_what;
  int64_t oom_count = 0;              // OOMs the allocator raised
  int64_t fragmentation_bytes = 0;    // peak_reserved - peak_allocated: cache not holding tensors
};

// Where a run trained and how large its device looked to it.
struct DeviceFigures {
  std::string device = "cpu";          // "cpu" or "cuda:N"
  std::string emulated_gpu;            // [device] emulate ("a10g", "custom"), "" without
  int64_t budget_bytes = 0;            // the allocator cap in force (0 = none)
  int64_t device_total_bytes = 0;      // CUDA: the GPU's memory; CPU: 0
  std::string allocator_settings;      // CUDA caching allocator settings applied ("" = defaults)
};

struct RunSummary {
  int64_t steps_completed = 0;
  int64_t measured_steps = 0;   // steps after warm-up used for throughput
  double tokens_per_s = 0.0;
  double step_time_median_s = 0.0;
  double step_time_p90_s = 0.0;
  double flops_per_token = 0.0;
  double peak_flops = 0.0;      // measured GEMM peak for the run's dtype
  double mfu = 0.0;
  // How the run compared with its GEMM peak (CheckMfuAgainstPeak): "" at or below it;
  // "remeasured" it beat the kept figure, measured again, whose higher figure peak_flops is;
  // "above_peak" mfu > 1 even so: a peak measured low, not a utilisation.
  std::string peak_flops_check;
  double final_loss = 0.0;
  double padding_fraction = 0.0;  // padding positions / all positions
  // The rows the run trained, over every step (warm-up included): positions per row (padding
  // included), mean and largest, and real target tokens per row. Well under seq_len means the
  // documents are shorter than a row (docs/metrics.md, "Short rows").
  double row_length_mean = 0.0;
  int64_t row_length_max = 0;
  double tokens_per_row = 0.0;
  int64_t parameters = 0;
  int64_t trainable_params = 0;  // elements of the parameters that train (all without adapter)
  // What an adapter changes in the training FLOPs per token (not stored): +6 per trainable
  // factor parameter (its forward, input-gradient and weight-gradient products), -2 per frozen
  // GEMM weight (no weight gradient). docs/metrics.md, "MFU".
  double flops_per_token_adjustment = 0.0;
  double wall_seconds = 0.0;
};

// This rank's place in the group and what it spent communicating (zeros on one process).
// Byte figures of the memory breakdown are always this rank's own.
struct RankFigures {
  int rank = 0;
  int world_size = 1;
  double comm_seconds = 0.0;  // wall time inside collectives, whole run
  int64_t comm_bytes = 0;     // payload bytes this rank sent, whole run
  int64_t comm_calls = 0;
  int64_t host_pool_peak_bytes = 0;  // offloaded state, outside the device budget
};

// A plugin the run used.
struct PluginUse {
  std::string slot;
  std::string name;
  std::string version;
  bool math_preserving = true;  // Strategy::MathPreserving(): leaves the training math unchanged
};

struct RunResult {
  RunStatus status = RunStatus::kOk;
  std::string error;
  std::optional<memory::OomEvent> oom;
  std::vector<StepRecord> steps;
  std::vector<TimelinePoint> timeline;
  MemoryBreakdown memory;
  RunSummary summary;
  env::EnvironmentInfo environment;
  data::DataConfig data;  // as the batching strategy configured it
  std::vector<PluginUse> plugins;
  std::string compute_dtype;  // the precision strategy's ComputeDtype ("float32", "bfloat16", ...)
  std::map<std::string, double> plugin_metrics;  // figures strategies recorded (summed)
  RankFigures dist;  // this rank in a multi-process run
  DeviceFigures device;
  // The allocation history ([experiment] memory_history; empty pickle when not recorded): the
  // worker writes it beside the result JSON (docs/snapshot.md).
  memory::MemorySnapshot memory_snapshot;
};

}  // namespace memsweep::train
