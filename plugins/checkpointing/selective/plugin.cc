// checkpointing/selective: only the attention core is recomputed in backward.
#include "checkpointed_attention.h"
#include "memsweep/plugin.h"

namespace {

class SelectiveCheckpointing final : public memsweep::CheckpointingStrategy {
 public:
  // Math-preserving: recomputes the same attention core (RNG and autocast state restored).
  bool MathPreserving() const override { return true; }
  explicit SelectiveCheckpointing(const memsweep::PluginParams&) {}
  memsweep::model::BlockRunner MakeBlockRunner() override {
    return memsweep::plugins::checkpointing::RunBlockWithCheckpointedAttention;
  }
  // No stage hooks: its block runner does the work.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }
};

}  // namespace

MEMSWEEP_PLUGIN(SelectiveCheckpointing, "selective", "checkpointing", "1.0.0",
                "Recompute only the attention core (scores, softmax, dropout) in backward",
                MEMSWEEP_NO_PARAMS, /*slot_default=*/0)
