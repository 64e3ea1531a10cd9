#include "memsweep/stage.h"

namespace memsweep {

const char* StageName(Stage stage) {
  switch (stage) {
    case Stage::kEnvironment: return "environment";
    case Stage::kModel: return "model";
    case Stage::kData: return "data";
    case Stage::kOptimizer: return "optimizer";
    case Stage::kStepBegin: return "step_begin";
    case Stage::kForward: return "forward";
    case Stage::kBackward: return "backward";
    case Stage::kOptimizerStep: return "optimizer_step";
    case Stage::kStepEnd: return "step_end";
    case Stage::kRunEnd: return "run_end";
  }
  return "unknown";
}

}  // namespace memsweep
