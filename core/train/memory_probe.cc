#include "core/train/memory_probe.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/memory/byte_size.h"
#include "core/memory/rss.h"

namespace memsweep::train {
namespace {

// MEMSWEEP_HEAP_TRACE=1: a line on stderr at every stage's end saying where the process's
// resident memory is (docs/cli.md): what to look at when a worker's resident set exceeds the
// estimate's host figure (docs/estimate.md).
bool HeapTraceOn() {
  static const bool on = [] {
    const char* setting = std::getenv("MEMSWEEP_HEAP_TRACE");
    return setting != nullptr && *setting != '\0' && std::strcmp(setting, "0") != 0;
  }();
  return on;
}

}  // namespace

MemoryProbe::MemoryProbe(memory::DeviceMeter& meter, RunResult& result)
    : tracker_(meter), result_(result), start_(std::chrono::steady_clock::now()) {
  baseline_ = tracker_.AllocatedBytes();
  reserved_baseline_ = tracker_.ReservedBytes();
  tracker_.ResetPeak();
  tracker_.ResetCounts();
  tracker_.Largest().Reset();
  memory::ResetPeakRss();
  result_.memory.baseline_bytes = baseline_;
  result_.memory.phases = {{"forward"}, {"backward"}, {"optimizer_step"}};
}

PhaseMemory* MemoryProbe::PhaseFor(Stage stage) {
  switch (stage) {
    case Stage::kForward: return &result_.memory.phases[0];
    case Stage::kBackward: return &result_.memory.phases[1];
    case Stage::kOptimizerStep: return &result_.memory.phases[2];
    default: return nullptr;
  }
}

void MemoryProbe::Begin(Stage stage, int64_t step, int64_t micro_batch) {
  stage_ = stage;
  step_ = step;
  tracker_.SetStage(StageName(stage));
  tracker_.Largest().SetPosition(StageName(stage), step, micro_batch);
  tracker_.ResetWindowPeak();
  stage_start_bytes_ = tracker_.AllocatedBytes();
  if (PhaseFor(stage) != nullptr && model_state_) state_at_begin_ = model_state_();
}

void MemoryProbe::End() {
  const int64_t window_peak = Relative(tracker_.WindowPeakBytes());
  const int64_t now = tracker_.AllocatedBytes();
  step_peak_ = std::max(step_peak_, window_peak);

  TimelinePoint point;
  point.step = step_;
  point.stage = StageName(stage_);
  point.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  point.allocated_bytes = Relative(now);
  point.reserved_bytes = tracker_.ReservedBytes() - reserved_baseline_;
  point.peak_bytes = window_peak;
  result_.timeline.push_back(point);

  if (stage_ == Stage::kForward) {
    result_.memory.saved_activations_bytes =
        std::max(result_.memory.saved_activations_bytes, now - stage_start_bytes_);
  }
  PhaseMemory* phase = PhaseFor(stage_);
  if (phase != nullptr && model_state_) {
    // Gradients appear during backward and optimizer state during the first update: the model
    // state of a phase is the larger of what was held at its start and at its end.
    const ModelState at_end = model_state_();
    const int64_t state = std::max(state_at_begin_.Total(), at_end.Total());
    if (window_peak > phase->peak_bytes) {
      phase->peak_bytes = window_peak;
      phase->model_state_bytes = state;
      phase->activations_bytes = std::max<int64_t>(0, window_peak - state);
    }
    if (stage_ == Stage::kOptimizerStep) {
      result_.memory.params_bytes = at_end.params_bytes;
      result_.memory.trainable_params_bytes = at_end.trainable_params_bytes;
      result_.memory.frozen_params_bytes = at_end.params_bytes - at_end.trainable_params_bytes;
      result_.memory.grads_bytes = std::max(state_at_begin_.grads_bytes, at_end.grads_bytes);
      result_.memory.optimizer_bytes = at_end.optimizer_bytes;
    }
  }
  if (HeapTraceOn()) {
    const std::string line = std::string("heap-trace: ") + StageName(stage_) + " step " +
                             std::to_string(step_) + ": " +
                             memory::DescribeHeap(memory::ReadHeap()) + "; reserved " +
                             memory::FormatBytes(tracker_.ReservedBytes()) + "\n";
    std::fputs(line.c_str(), stderr);
  }
  tracker_.SetStage("idle");
  tracker_.Largest().SetPosition("idle", step_, -1);
}

void MemoryProbe::Finish() {
  MemoryBreakdown& m = result_.memory;
  m.peak_allocated_bytes = Relative(tracker_.PeakAllocatedBytes());
  m.peak_reserved_bytes = tracker_.PeakReservedBytes() - reserved_baseline_;
  m.peak_rss_bytes = memory::PeakRssBytes();
  m.activations_bytes =
      std::max<int64_t>(0, m.peak_allocated_bytes - m.params_bytes - m.grads_bytes -
                               m.optimizer_bytes);
  m.allocations = tracker_.Allocations();
  m.peak_active_bytes = tracker_.PeakActiveBytes() - baseline_;
  m.alloc_retries = tracker_.AllocRetries();
  m.oom_count = tracker_.OomCount();
  m.fragmentation_bytes = std::max<int64_t>(0, m.peak_reserved_bytes - m.peak_allocated_bytes);
  const memory::LargestAllocation largest = tracker_.Largest().Get();
  m.largest_allocation_bytes = largest.bytes;
  m.largest_allocation_stage = largest.stage;
  m.largest_allocation_step = largest.step;
  m.largest_allocation_micro_batch = largest.micro_batch;
  m.largest_allocation_what = largest.what;
}

}  // namespace memsweep::train
