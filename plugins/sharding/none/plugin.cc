// sharding/none: one process holds the whole model, gradients and optimizer state.
#include <stdexcept>

#include "memsweep/plugin.h"

namespace {

class NoSharding final : public memsweep::ShardingStrategy {
 public:
  // Math-preserving: nothing is partitioned.
  bool MathPreserving() const override { return true; }
  bool SupportsFrozenParameters() const override { return true; }
  explicit NoSharding(const memsweep::PluginParams&) {}
  // Ranks that never exchange gradients would train N different models.
  void OnStageBegin(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    if (stage == memsweep::Stage::kEnvironment && ctx.comm != nullptr) {
      throw std::invalid_argument(
          "sharding \"none\" runs a single process; with device.world_size > 1 choose "
          "\"ddp\", \"zero1\", \"zero2\" or \"zero3\"");
    }
  }
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{
        {memsweep::Stage::kEnvironment, memsweep::HookPoint::kBegin,
         "refuses the run when world_size > 1"}};
  }
};

}  // namespace

MEMSWEEP_PLUGIN(NoSharding, "none", "sharding", "1.0.0",
                "Single process: nothing is partitioned or communicated", MEMSWEEP_NO_PARAMS,
                /*slot_default=*/1)
