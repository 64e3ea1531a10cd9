#include "core/experiment/ablation.h"

#include <algorithm>
#include <set>

#include "core/config/config_error.h"
#include "core/config/dotted_keys.h"
#include "core/config/toml_reader.h"

namespace memsweep::experiment {
namespace {

using config::CanonicalKey;
using config::ConfigError;
using config::IsUnder;
using config::KeysOverlap;
using config::Where;

constexpr const char* kLabel = "[[ablation]]";

std::string StepName(toml::table& table, const std::string& source) {
  toml::node* name = table.get("name");
  if (name == nullptr || !name->is_string() || name->as_string()->get().empty()) {
    throw ConfigError(Where(source, name ? name->source() : table.source()) + kLabel +
                      " needs a name = \"...\" that labels the step in results, e.g. " +
                      "name = \"bf16\"");
  }
  const std::string& text = name->as_string()->get();
  if (text.find_first_of(" =,") != std::string::npos) {
    throw ConfigError(Where(source, name->source()) + kLabel + " name \"" + text +
                      "\" must not contain spaces, '=' or ','; it becomes a cell label");
  }
  return text;
}

void CheckStep(const toml::table& root, const AblationStep& step,
               const std::vector<AblationStep>& earlier, const MatrixSpec& spec,
               const std::string& source) {
  if (step.entry.items.empty()) {
    throw ConfigError(Where(source, step.entry.where) + kLabel + " \"" + step.name +
                      "\" changes nothing; give the dotted keys it sets, e.g. " +
                      "\"strategies.precision.plugin\" = \"bf16-autocast\"");
  }
  for (const AblationStep& other : earlier) {
    if (other.name == step.name) {
      throw ConfigError(Where(source, step.entry.where) + kLabel + " name \"" + step.name +
                        "\" is used twice; give each step its own name");
    }
  }
  for (const MatrixItem& item : step.entry.items) {
    for (const MatrixAxis& axis : spec.axes) {
      if (!KeysOverlap(root, item.key, axis.key)) continue;
      throw ConfigError(Where(source, item.where) + kLabel + " \"" + step.name + "\" sets '" +
                        item.key + "', which [matrix] varies ('" + axis.key +
                        "'); vary a key in the matrix or in the ablation, not both");
    }
    for (const AblationStep& other : earlier) {
      for (const MatrixItem& theirs : other.entry.items) {
        if (!KeysOverlap(root, item.key, theirs.key)) continue;
        throw ConfigError(Where(source, item.where) + kLabel + " \"" + step.name + "\" sets '" +
                          item.key + "', which step \"" + other.name + "\" sets too ('" +
                          theirs.key + "'); with both on, one would silently win: merge them");
      }
    }
  }
}

}  // namespace

void ReadAblation(toml::table& root, const std::string& source, MatrixSpec& spec) {
  toml::node* node = root.get("ablation");
  if (node == nullptr) return;
  const std::string problem = std::string("'ablation' must be an array of tables: write each ") +
                              "step as [[ablation]] with a name and the keys it sets";
  if (!node->is_array()) throw ConfigError(Where(source, node->source()) + problem);
  spec.ablation_where = node->source();
  for (toml::node& element : *node->as_array()) {
    if (!element.is_table()) throw ConfigError(Where(source, element.source()) + problem);
    toml::table& table = *element.as_table();
    AblationStep step;
    step.name = StepName(table, source);
    step.entry = ReadEntryTable(table, kLabel, {"name"}, spec, source);
    CheckStep(root, step, spec.ablation, spec, source);
    spec.ablation.push_back(std::move(step));
  }
}

void PinAblationOverrides(const toml::table& root, const std::vector<std::string>& overrides,
                          MatrixSpec& spec) {
  for (const std::string& assignment : overrides) {
    const std::string key = CanonicalKey(root, assignment.substr(0, assignment.find('=')));
    for (AblationStep& step : spec.ablation) {
      // Items are flattened to leaf keys, so a --set names an item or a table holding items.
      auto& items = step.entry.items;
      items.erase(std::remove_if(items.begin(), items.end(),
                                 [&](const MatrixItem& item) {
                                   return IsUnder(CanonicalKey(root, item.key), key);
                                 }),
                  items.end());
    }
  }
  // A step that --set left with nothing to change would only repeat other cells.
  auto& steps = spec.ablation;
  steps.erase(std::remove_if(steps.begin(), steps.end(),
                             [](const AblationStep& step) { return step.entry.items.empty(); }),
              steps.end());
}

std::vector<AblationVariant> AblationVariants(const std::vector<AblationStep>& steps) {
  std::vector<AblationVariant> variants;
  if (steps.empty()) return variants;
  std::set<std::vector<size_t>> seen;
  auto add = [&](std::string label, std::vector<size_t> on) {
    if (seen.insert(on).second) variants.push_back({std::move(label), std::move(on)});
  };
  std::vector<size_t> all;
  for (size_t s = 0; s < steps.size(); ++s) all.push_back(s);
  add("baseline", {});
  for (size_t s = 0; s < steps.size(); ++s) add("+" + steps[s].name, {s});
  add("all", all);
  for (size_t s = 0; s < steps.size(); ++s) {
    std::vector<size_t> rest;
    for (size_t t : all) {
      if (t != s) rest.push_back(t);
    }
    add("all-" + steps[s].name, rest);
  }
  return variants;
}

}  // namespace memsweep::experiment
