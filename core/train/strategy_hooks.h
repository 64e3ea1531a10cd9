// StrategyHooks: how the trainer talks to the run's strategies. It runs their stage hooks in
// slot order (reverse order at a stage's end), finds each slot's capability, and wraps every
// call into plugin code so that an exception names the plugin (PluginError) while a budget
// OOM passes through unchanged.
#pragma once

#include <array>
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
  // Finds each slot's strategy once (the first of its slot; callbacks have no capability).
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

 private:
  const StrategySet& strategies_;
  std::array<const ActiveStrategy*, kSlotCount> by_slot_{};
};

// Runs fn(); rethrows c10::OutOfMemoryError as is and anything else as PluginError naming the
// plugin and what it was doing.
template <typename Fn>
auto CallPlugin(const ActiveStrategy& active, const std::string& what, Fn&& fn) -> decltype(fn());

}  // namespace memsweep::train

#include "core/train/strategy_hooks_inl.h"
