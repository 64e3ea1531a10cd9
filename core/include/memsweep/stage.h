// The named stages of a memsweep training run, in the order the loop enters them. Strategy
// plugins hook on these names (strategy.h); memory figures (timeline, per-phase peaks, OOM
// reports) are labelled with them.
//
//   environment → model → data → optimizer →
//     [ step_begin → (forward → backward) × accumulation → optimizer_step → step_end ] × steps
//   → run_end
#pragma once

#include <cstdint>

namespace memsweep {

enum class Stage : uint8_t {
  kEnvironment,
  kModel,
  kData,
  kOptimizer,
  kStepBegin,
  kForward,
  kBackward,
  kOptimizerStep,
  kStepEnd,
  kRunEnd,
};

// "environment", "model", "data", "optimizer", "step_begin", "forward", "backward",
// "optimizer_step", "step_end", "run_end": static strings.
const char* StageName(Stage stage);

}  // namespace memsweep

namespace memsweep::train {
using memsweep::Stage;
using memsweep::StageName;
}  // namespace memsweep::train
