#include "core/train/strategy_hooks.h"

namespace memsweep::train {

void StrategyHooks::Begin(Stage stage, RunContext& context) const {
  const std::string what = std::string(StageName(stage)) + " (begin)";
  for (const auto& active : strategies_) {
    CallPlugin(active, what, [&] { active.impl->OnStageBegin(stage, context); });
  }
}

void StrategyHooks::End(Stage stage, RunContext& context) const {
  const std::string what = std::string(StageName(stage)) + " (end)";
  for (auto it = strategies_.rbegin(); it != strategies_.rend(); ++it) {
    CallPlugin(*it, what, [&] { it->impl->OnStageEnd(stage, context); });
  }
}

}  // namespace memsweep::train
