// checkpointing/full: every decoder block keeps only its input; backward recomputes the block.
#include "full_checkpointing.h"
#include "memsweep/plugin.h"

namespace {

class FullCheckpointing final : public memsweep::CheckpointingStrategy {
 public:
  // Math-preserving: recomputes the same forward (RNG and autocast state restored): same gradients.
  bool MathPreserving() const override { return true; }
  explicit FullCheckpointing(const memsweep::PluginParams&) {}
  memsweep::model::BlockRunner MakeBlockRunner() override {
    return memsweep::plugins::checkpointing::MakeFullCheckpointingRunner();
  }
  // No stage hooks: its block runner does the work.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }
};

}  // namespace

MEMSWEEP_PLUGIN(FullCheckpointing, "full", "checkpointing", "1.0.0",
                "Recompute every decoder block in backward: only block inputs are kept",
                MEMSWEEP_NO_PARAMS, /*slot_default=*/0)
