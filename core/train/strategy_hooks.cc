#include "core/train/strategy_hooks.h"

namespace memsweep::train {

StrategyHooks::StrategyHooks(const StrategySet& strategies) : strategies_(strategies) {
  for (const auto& active : strategies_) {
    Slot slot{};
    if (!ParseSlot(active.slot, slot)) {
      throw PluginError("plugin '" + active.name + "' fills an unknown slot '" + active.slot + "'");
    }
    const ActiveStrategy*& first = by_slot_[static_cast<size_t>(slot)];
    if (first == nullptr) first = &active;
  }
}

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

void StrategyHooks::ParametersBuilt(const std::vector<size_t>& built, RunContext& context) const {
  for (auto it = strategies_.rbegin(); it != strategies_.rend(); ++it) {
    CallPlugin(*it, "model (parameters built)",
               [&] { it->impl->OnParametersBuilt(built, context); });
  }
}

}  // namespace memsweep::train
