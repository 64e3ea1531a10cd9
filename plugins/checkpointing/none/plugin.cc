// checkpointing/none: every decoder block keeps its activations for backward.
#include "memsweep/plugin.h"

namespace {

class NoCheckpointing final : public memsweep::CheckpointingStrategy {
 public:
  // Math-preserving: the plain forward and backward.
  bool MathPreserving() const override { return true; }
  explicit NoCheckpointing(const memsweep::PluginParams&) {}
  memsweep::model::BlockRunner MakeBlockRunner() override {
    return memsweep::model::RunBlockDirectly;
  }
  // No stage hooks: its block runner does the work.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }
};

}  // namespace

MEMSWEEP_PLUGIN(NoCheckpointing, "none", "checkpointing", "1.0.0",
                "No recomputation: blocks keep their activations for backward", MEMSWEEP_NO_PARAMS,
                /*slot_default=*/1)
