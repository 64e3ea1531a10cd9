#include "core/results/config_difference.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

namespace memsweep::results {
namespace {

using nlohmann::json;

// Configuration keys that cannot change what is computed, only where and how it is measured.
// experiment.seed and experiment.steps are compared before (a different seed or length: n/a).
// device.type is not one of them: CPU and CUDA kernels sum in different orders (and CUDA picks
// other algorithms), so a CPU and a CUDA cell are compared by figures, without a loss verdict.
bool IsNeutralKey(const std::string& key) {
  static const std::set<std::string> kNeutral = {"experiment.name", "experiment.warmup_steps",
                                                 "experiment.seed", "experiment.steps"};
  if (key == "device.type") return false;
  return kNeutral.count(key) > 0 || key.rfind("device.", 0) == 0;
}

// Dotted key -> value for every leaf outside `strategies`.
void Flatten(const json& value, const std::string& prefix, std::map<std::string, json>& out) {
  if (!value.is_object()) {
    out[prefix] = value;
    return;
  }
  for (const auto& [key, child] : value.items()) {
    if (prefix.empty() && key == "strategies") continue;
    Flatten(child, prefix.empty() ? key : prefix + "." + key, out);
  }
}

std::string Text(const json& value) {
  if (value.is_null()) return "(none)";
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// One [strategies.<slot>] choice: plugin, version and parameters (defaults filled in).
struct Choice {
  std::string plugin;
  std::string version;
  json params = json::object();

  bool operator==(const Choice& other) const {
    return plugin == other.plugin && version == other.version && params == other.params;
  }
  bool operator<(const Choice& other) const {
    return std::tie(plugin, version) < std::tie(other.plugin, other.version) ||
           (std::tie(plugin, version) == std::tie(other.plugin, other.version) &&
            params.dump() < other.params.dump());
  }
};

std::map<std::string, std::vector<Choice>> ChoicesBySlot(const json& config) {
  std::map<std::string, std::vector<Choice>> slots;
  if (!config.is_object() || !config.contains("strategies")) return slots;
  for (const json& entry : config["strategies"]) {
    Choice choice;
    choice.plugin = entry.value("plugin", "");
    choice.version = entry.value("version", "");
    if (entry.contains("params")) choice.params = entry["params"];
    slots[entry.value("slot", "")].push_back(choice);
  }
  return slots;
}

bool Preserving(const RunEvidence& run, const std::string& slot, const std::string& plugin) {
  for (const PluginFlag& flag : run.plugins) {
    if (flag.slot == slot && flag.name == plugin) return flag.math_preserving.value_or(false);
  }
  return false;  // not recorded: nothing is promised
}

// "micro_batch_size 4 -> 1, accumulation_steps 1 -> 4" for two choices of the same plugin.
std::string ParamChanges(const Choice& from, const Choice& to) {
  std::set<std::string> keys;
  for (const auto& [key, value] : from.params.items()) keys.insert(key);
  for (const auto& [key, value] : to.params.items()) keys.insert(key);
  std::string out;
  for (const std::string& key : keys) {
    const json a = from.params.value(key, json());
    const json b = to.params.value(key, json());
    if (a == b) continue;
    out += (out.empty() ? "" : ", ") + key + " " + Text(a) + " -> " + Text(b);
  }
  if (from.version != to.version) {
    out += (out.empty() ? "" : ", ") + std::string("version ") + from.version + " -> " + to.version;
  }
  return out;
}

std::string Describe(const std::string& slot, const std::vector<Choice>& from,
                     const std::vector<Choice>& to) {
  if (from.size() == 1 && to.size() == 1 && from[0].plugin == to[0].plugin) {
    return slot + "/" + from[0].plugin + ": " + ParamChanges(from[0], to[0]);
  }
  const auto names = [](const std::vector<Choice>& choices) {
    std::string out;
    for (const Choice& c : choices) out += (out.empty() ? "" : "+") + c.plugin;
    return out.empty() ? std::string("(none)") : out;
  };
  return slot + ": " + names(from) + " -> " + names(to);
}

// The choices of `a` that `b` lacks (as multisets: callbacks may repeat).
std::vector<Choice> Minus(std::vector<Choice> a, std::vector<Choice> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<Choice> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

void AddStrategyDifferences(const RunEvidence& reference, const RunEvidence& run,
                            ConfigDifference& difference) {
  const auto from_slots = ChoicesBySlot(reference.config);
  const auto to_slots = ChoicesBySlot(run.config);
  std::set<std::string> slots;
  for (const auto& [slot, choices] : from_slots) slots.insert(slot);
  for (const auto& [slot, choices] : to_slots) slots.insert(slot);
  for (const std::string& slot : slots) {
    const auto from_it = from_slots.find(slot);
    const auto to_it = to_slots.find(slot);
    const std::vector<Choice> from = from_it == from_slots.end() ? std::vector<Choice>{}
                                                                 : from_it->second;
    const std::vector<Choice> to = to_it == to_slots.end() ? std::vector<Choice>{} : to_it->second;
    const std::vector<Choice> removed = Minus(from, to);
    const std::vector<Choice> added = Minus(to, from);
    if (removed.empty() && added.empty()) continue;
    bool preserving = true;
    for (const Choice& c : removed) preserving = preserving && Preserving(reference, slot, c.plugin);
    for (const Choice& c : added) preserving = preserving && Preserving(run, slot, c.plugin);
    const std::string text = Describe(slot, removed, added);
    if (preserving) {
      difference.preserving.push_back(text);
    } else {
      difference.not_preserving.push_back(text + " (not math-preserving)");
    }
  }
}

}  // namespace

ConfigDifference DifferenceBetween(const RunEvidence& reference, const RunEvidence& run) {
  ConfigDifference difference;
  std::map<std::string, json> from;
  std::map<std::string, json> to;
  Flatten(reference.config, "", from);
  Flatten(run.config, "", to);
  std::set<std::string> keys;
  for (const auto& [key, value] : from) keys.insert(key);
  for (const auto& [key, value] : to) keys.insert(key);
  for (const std::string& key : keys) {
    const json a = from.count(key) ? from[key] : json();
    const json b = to.count(key) ? to[key] : json();
    if (a == b) continue;
    const std::string text = key + ": " + Text(a) + " -> " + Text(b);
    (IsNeutralKey(key) ? difference.neutral : difference.training).push_back(text);
  }
  // Seed and steps are checked by VerifyRun; listing them here would only repeat it.
  difference.neutral.erase(
      std::remove_if(difference.neutral.begin(), difference.neutral.end(),
                     [](const std::string& text) {
                       return text.rfind("experiment.seed:", 0) == 0 ||
                              text.rfind("experiment.steps:", 0) == 0;
                     }),
      difference.neutral.end());
  AddStrategyDifferences(reference, run, difference);
  return difference;
}

}  // namespace memsweep::results
