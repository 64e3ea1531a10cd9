// MemoryProbe: the trainer's view of the device's allocator (device_meter.h: the tracking
// allocator on the CPU, the CUDA caching allocator on a GPU). It labels the allocator with the
// stage now running, measures each stage's peak, records the timeline, and keeps the per-phase
// breakdown (forward, backward, optimizer_step). Model-state sizes come from the tensors
// themselves (distinct storages), never from estimates.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "core/memory/device_meter.h"
#include "core/train/run_result.h"
#include "memsweep/stage.h"

namespace memsweep::train {

struct ModelState {
  int64_t params_bytes = 0;
  int64_t trainable_params_bytes = 0;  // of params_bytes
  int64_t grads_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t Total() const { return params_bytes + grads_bytes + optimizer_bytes; }
};

class MemoryProbe {
 public:
  using ModelStateFn = std::function<ModelState()>;

  MemoryProbe(memory::DeviceMeter& meter, RunResult& result);

  void SetModelStateFn(ModelStateFn fn) { model_state_ = std::move(fn); }
  // micro_batch: the micro-batch of a forward or backward stage, else -1 (for the largest
  // allocation's position).
  void Begin(Stage stage, int64_t step, int64_t micro_batch = -1);
  void End();
  // Highest allocated bytes (relative to the baseline) since the last ResetStepPeak.
  int64_t StepPeak() const { return step_peak_; }
  void ResetStepPeak() { step_peak_ = 0; }
  // Fills peaks, breakdown and RSS into result.memory.
  void Finish();
  int64_t Relative(int64_t absolute_bytes) const { return absolute_bytes - baseline_; }

 private:
  PhaseMemory* PhaseFor(Stage stage);

  memory::DeviceMeter& tracker_;
  RunResult& result_;
  ModelStateFn model_state_;
  std::chrono::steady_clock::time_point start_;
  int64_t baseline_ = 0;
  int64_t reserved_baseline_ = 0;
  Stage stage_ = Stage::kEnvironment;
  int64_t step_ = -1;
  int64_t stage_start_bytes_ = 0;
  ModelState state_at_begin_;
  int64_t step_peak_ = 0;
};

}  // namespace memsweep::train
