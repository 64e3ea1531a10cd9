#include "core/train/strategy_hooks.h"

#include <algorithm>
#include <atomic>

namespace memsweep::train {
namespace {
std::atomic<bool> honour_declarations{true};
}  // namespace

void StrategyHooks::HonourDeclarations(bool honour) { honour_declarations = honour; }

std::optional<std::vector<StageHook>> DeclaredHooks(const ActiveStrategy& active) {
  std::optional<std::vector<StageHook>> hooks =
      CallPlugin(active, "its hooks (StageHooks)", [&] { return active.impl->StageHooks(); });
  if (!hooks) return hooks;
  for (size_t i = 0; i < hooks->size(); ++i) {
    const StageHook& hook = (*hooks)[i];
    const std::string where = std::string(StageName(hook.stage)) + " (" +
                              HookPointName(hook.point) + ")";
    if (hook.point == HookPoint::kParametersBuilt && hook.stage != Stage::kModel) {
      throw PluginError("plugin '" + active.name + "' declares a hook at " + where +
                        ": parameters are built in the model stage only");
    }
    for (size_t j = 0; j < i; ++j) {
      if ((*hooks)[j].stage == hook.stage && (*hooks)[j].point == hook.point) {
        throw PluginError("plugin '" + active.name + "' declares its hook at " + where +
                          " twice: one StageHook per stage and point, saying all it does there");
      }
    }
  }
  return hooks;
}

StrategyHooks::StrategyHooks(const StrategySet& strategies) : strategies_(strategies) {
  const bool honour = honour_declarations;
  for (const auto& active : strategies_) {
    Slot slot{};
    if (!ParseSlot(active.slot, slot)) {
      throw PluginError("plugin '" + active.name + "' fills an unknown slot '" + active.slot + "'");
    }
    const ActiveStrategy*& first = by_slot_[static_cast<size_t>(slot)];
    if (first == nullptr) first = &active;
    HookSet runs;
    const std::optional<std::vector<StageHook>> declared = DeclaredHooks(active);
    if (!declared || !honour) {
      runs.set();
    } else {
      for (const StageHook& hook : *declared) runs.set(Bit(hook.stage, hook.point));
    }
    runs_.push_back(runs);
  }
}

std::vector<const ActiveStrategy*> StrategyHooks::Runs(Stage stage, HookPoint point) const {
  std::vector<const ActiveStrategy*> runs;
  const size_t bit = Bit(stage, point);
  for (size_t i = 0; i < strategies_.size(); ++i) {
    if (runs_[i].test(bit)) runs.push_back(&strategies_[i]);
  }
  // A stage's end, and the model stage's parameters built, run in reverse slot order.
  if (point != HookPoint::kBegin) std::reverse(runs.begin(), runs.end());
  return runs;
}

void StrategyHooks::Begin(Stage stage, RunContext& context) const {
  const std::string what = std::string(StageName(stage)) + " (begin)";
  for (const ActiveStrategy* active : Runs(stage, HookPoint::kBegin)) {
    CallPlugin(*active, what, [&] { active->impl->OnStageBegin(stage, context); });
  }
}

void StrategyHooks::End(Stage stage, RunContext& context) const {
  const std::string what = std::string(StageName(stage)) + " (end)";
  for (const ActiveStrategy* active : Runs(stage, HookPoint::kEnd)) {
    CallPlugin(*active, what, [&] { active->impl->OnStageEnd(stage, context); });
  }
}

void StrategyHooks::ParametersBuilt(const std::vector<size_t>& built, RunContext& context) const {
  for (const ActiveStrategy* active : Runs(Stage::kModel, HookPoint::kParametersBuilt)) {
    CallPlugin(*active, "model (parameters built)",
               [&] { active->impl->OnParametersBuilt(built, context); });
  }
}

}  // namespace memsweep::train
