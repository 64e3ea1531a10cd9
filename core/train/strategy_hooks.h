// StrategyHooks: how the trainer talks to the run's strategies. It runs their stage hooks in
// slot order (reverse order at a stage's end) — each strategy only where it declares a hook
// (Strategy::StageHooks; everywhere when it declares none) — finds each slot's capability, and
// wraps every call into plugin code so that an exception names the plugin (PluginError) while a
// budget OOM passes through unchanged.
#pragma once

#include <array>
#include <bitset>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/plugin/active_strategy.h"
#include "memsweep/strategy.h"

namespace memsweep::train {

using plugin::ActiveStrategy;  // the strategies a run uses (core/plugin/active_strategy.h)
using plugin::StrategySet;

class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class StrategyHooks {
 public:
  // Finds each slot's strategy once (the first of its slot; callbacks have no capability) and
  // asks each strategy where its hooks act.
  explicit StrategyHooks(const StrategySet& strategies);

  void Begin(Stage stage, RunContext& context) const;
  void End(Stage stage, RunContext& context) const;
  // Strategy::OnParametersBuilt on every strategy, in End's order.
  void ParametersBuilt(const std::vector<size_t>& built, RunContext& context) const;

  // The strategy of `slot` as interface T, or PluginError if the slot is empty or the plugin
  // does not implement T.
  template <typename T>
  std::pair<T*, const ActiveStrategy*> Get(Slot slot) const {
    const ActiveStrategy* active = by_slot_[static_cast<size_t>(slot)];
    if (active == nullptr) throw PluginError(std::string("no plugin in slot '") + SlotName(slot) + "'");
    if (auto* typed = dynamic_cast<T*>(active->impl.get())) return {typed, active};
    throw PluginError("plugin '" + active->name + "' does not implement the " + SlotName(slot) +
                      " slot's interface");
  }

  // The strategies whose hook runs at (stage, point), in the order they run: slot order at a
  // stage's beginning, reverse slot order at its end and at parameters built.
  std::vector<const ActiveStrategy*> Runs(Stage stage, HookPoint point) const;

  // True (the default): a strategy's hooks run only where it declares them. False: every hook
  // of every strategy runs — tests use it to check that a declaration leaves nothing out (a run
  // gives the same figures either way). Process-wide; read when a StrategyHooks is made.
  static void HonourDeclarations(bool honour);

 private:
  // Bit (stage * 3 + point) set where the strategy's hook runs.
  using HookSet = std::bitset<static_cast<size_t>(Stage::kRunEnd) * 3 + 3>;
  static size_t Bit(Stage stage, HookPoint point) {
    return static_cast<size_t>(stage) * 3 + static_cast<size_t>(point);
  }

  const StrategySet& strategies_;
  std::array<const ActiveStrategy*, kSlotCount> by_slot_{};
  std::vector<HookSet> runs_;  // per strategy, in strategies_' order
};

// Where `active`'s hooks run: its declaration's points, or every point when it declares none.
// Throws PluginError for a declaration that names a stage twice or parameters built outside
// the model stage.
std::optional<std::vector<StageHook>> DeclaredHooks(const ActiveStrategy& active);

// Runs fn(); rethrows c10::OutOfMemoryError as is and anything else as PluginError naming the
// plugin and what it was doing.
template <typename Fn>
auto CallPlugin(const ActiveStrategy& active, const std::string& what, Fn&& fn) -> decltype(fn());

}  // namespace memsweep::train

#include "core/train/strategy_hooks_inl.h"
