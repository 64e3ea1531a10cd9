#include "core/experiment/matrix.h"

#include <algorithm>
#include <tuple>

#include "core/config/config_error.h"
#include "core/config/dotted_keys.h"
#include "core/experiment/ablation.h"
#include "core/config/toml_reader.h"
#include "core/experiment/matrix_overrides.h"
#include "core/experiment/toml_json.h"

namespace memsweep::experiment {
namespace {

using config::ConfigError;
using config::KeysOverlap;
using config::Where;

// More combinations than any sweep could run; guards against a typo exhausting memory.
constexpr size_t kMaxCombinations = 100000;

// Sorts by position: first what the file says, then --set text, then nodes without a position.
auto PositionKey(const toml::source_region& region, const std::string& source) {
  const int rank = region.begin.line == 0 ? 2 : (region.path && *region.path != source ? 1 : 0);
  return std::make_tuple(rank, region.begin.line, region.begin.column);
}

std::string JoinKeys(const std::vector<MatrixAxis>& axes) {
  std::string out;
  for (const auto& axis : axes) out += (out.empty() ? "" : ", ") + axis.key;
  return out;
}

void ReadAxes(toml::table& table, const std::string& prefix, const std::string& source,
              MatrixSpec& spec) {
  for (auto&& [key, node] : table) {
    const std::string name(key.str());
    if (prefix.empty() && (name == "exclude" || name == "include")) continue;
    const std::string dotted = prefix.empty() ? name : prefix + "." + name;
    if (node.is_table()) {
      ReadAxes(*node.as_table(), dotted, source, spec);
      continue;
    }
    if (dotted.find('.') == std::string::npos) {
      throw ConfigError(Where(source, key.source()) + "[matrix] key '" + dotted +
                        "' must name a section and a key, e.g. \"strategies.batching.micro_batch_size\" = "
                        "[1, 2]");
    }
    if (!node.is_array() || node.as_array()->empty()) {
      throw ConfigError(Where(source, node.source()) + "[matrix] \"" + dotted +
                        "\" must be a non-empty array of the values to try, e.g. [1, 2]");
    }
    if (const MatrixAxis* other = spec.FindAxis(dotted)) {
      const bool this_one_later =
          PositionKey(other->where, source) < PositionKey(key.source(), source);
      throw ConfigError(Where(source, this_one_later ? key.source() : other->where) +
                        "[matrix] \"" + dotted + "\" is given twice; keep one list of values");
    }
    MatrixAxis axis;
    axis.key = dotted;
    axis.where = key.source();
    for (toml::node& value : *node.as_array()) {
      axis.values.push_back(TomlToJson(value));
      axis.nodes.push_back(&value);
    }
    spec.axes.push_back(std::move(axis));
  }
}

// Keys are compared as paths into `root`: "strategies.callbacks.0" and
// "strategies.callbacks.empty_cache" may name one list entry.
void CheckAxesDoNotOverlap(const toml::table& root, const MatrixSpec& spec,
                           const std::string& source) {
  for (size_t i = 0; i < spec.axes.size(); ++i) {
    for (size_t j = i + 1; j < spec.axes.size(); ++j) {
      const std::string& a = spec.axes[i].key;
      const std::string& b = spec.axes[j].key;
      if (!KeysOverlap(root, a, b)) continue;
      const bool same = config::CanonicalKey(root, a) == config::CanonicalKey(root, b);
      throw ConfigError(Where(source, spec.axes[j].where) + "[matrix] keys '" + a + "' and '" + b +
                        "' overlap: " +
                        (same ? "both name one value, a list entry by its index and by its plugin"
                              : "one lies inside the other") +
                        "; vary only one of them");
    }
  }
}

// Flattens an entry's nested tables into dotted keys, except where a table is the value of a
// matrix key itself. `label` names the entry's kind in messages ("[[matrix.include]]").
void FlattenEntry(toml::table& table, const std::string& prefix, const std::string& label,
                  const MatrixSpec& spec, const std::string& source,
                  const std::vector<std::string>& skip, MatrixEntry& entry) {
  for (auto&& [key, node] : table) {
    const std::string name(key.str());
    const std::string dotted = prefix.empty() ? name : prefix + "." + name;
    if (prefix.empty() && std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    if (node.is_table() && spec.FindAxis(dotted) == nullptr) {
      FlattenEntry(*node.as_table(), dotted, label, spec, source, skip, entry);
      continue;
    }
    if (dotted.find('.') == std::string::npos) {
      throw ConfigError(Where(source, key.source()) + label + " key '" + dotted +
                        "' must be a dotted key such as \"strategies.batching.micro_batch_size\"");
    }
    for (const MatrixItem& item : entry.items) {
      if (item.key != dotted) continue;
      throw ConfigError(Where(source, key.source()) + label + " key '" + dotted +
                        "' is given twice in one entry; keep one");
    }
    entry.items.push_back({dotted, TomlToJson(node), node.source(), &node});
  }
}

std::vector<MatrixEntry> ReadEntries(toml::table& matrix, const std::string& what,
                                     const MatrixSpec& spec, const std::string& source) {
  std::vector<MatrixEntry> entries;
  toml::node* node = matrix.get(what);
  if (node == nullptr) return entries;
  const std::string problem = "[matrix] " + what + " must be an array of tables: write each " +
                              "entry as [[matrix." + what + "]] followed by its keys";
  if (!node->is_array()) throw ConfigError(Where(source, node->source()) + problem);
  for (toml::node& element : *node->as_array()) {
    if (!element.is_table()) throw ConfigError(Where(source, element.source()) + problem);
    entries.push_back(
        ReadEntryTable(*element.as_table(), "[[matrix." + what + "]]", {}, spec, source));
  }
  return entries;
}

void CheckExcludes(const MatrixSpec& spec, const std::string& source) {
  for (const MatrixEntry& entry : spec.excludes) {
    if (entry.items.empty()) {
      throw ConfigError(Where(source, entry.where) + "an empty [[matrix.exclude]] entry would " +
                        "remove every combination; give the matrix keys and values it matches");
    }
    for (const MatrixItem& item : entry.items) {
      if (spec.FindAxis(item.key) != nullptr) continue;
      throw ConfigError(Where(source, item.where) + "[[matrix.exclude]] key '" + item.key +
                        "' is not a key of the matrix; exclude entries match combinations by " +
                        "matrix keys: " + JoinKeys(spec.axes));
    }
  }
}

void CheckIncludes(const toml::table& root, const MatrixSpec& spec, const std::string& source) {
  for (const MatrixEntry& entry : spec.includes) {
    for (const MatrixItem& item : entry.items) {
      for (const MatrixAxis& axis : spec.axes) {
        if (item.key == axis.key || !KeysOverlap(root, item.key, axis.key)) continue;
        throw ConfigError(Where(source, item.where) + "[[matrix.include]] key '" + item.key +
                          "' overlaps the matrix key '" + axis.key +
                          "'; name the matrix key itself or a key outside it");
      }
    }
  }
}

const nlohmann::json* ValueIn(const MatrixSpec& spec, const Combination& combination,
                              const std::string& key) {
  const ValueRef* ref = combination.Find(key);
  return ref == nullptr ? nullptr : &ValueOf(spec, *ref);
}

bool Excluded(const MatrixSpec& spec, const Combination& combination) {
  for (const MatrixEntry& entry : spec.excludes) {
    bool all_match = true;
    for (const MatrixItem& item : entry.items) {
      const nlohmann::json* value = ValueIn(spec, combination, item.key);
      all_match = all_match && value != nullptr && *value == item.value;
    }
    if (all_match) return true;
  }
  return false;
}

// An include entry extends a combination when it agrees with all of the combination's matrix
// values; keys it adds may overwrite what earlier entries added.
bool Extends(const MatrixSpec& spec, const Combination& combination, const MatrixEntry& entry) {
  for (const MatrixItem& item : entry.items) {
    if (spec.FindAxis(item.key) == nullptr) continue;
    const nlohmann::json* value = ValueIn(spec, combination, item.key);
    if (value == nullptr || *value != item.value) return false;
  }
  return true;
}

void Set(Combination& combination, const std::string& key, const ValueRef& ref) {
  for (auto& [existing, value] : combination.values) {
    if (existing != key) continue;
    value = ref;
    return;
  }
  combination.values.emplace_back(key, ref);
}

std::vector<Combination> CartesianProduct(const MatrixSpec& spec, const std::string& source) {
  std::vector<Combination> combinations;
  if (spec.axes.empty()) return combinations;
  size_t total = 1;
  for (const MatrixAxis& axis : spec.axes) {
    total *= axis.values.size();
    if (total > kMaxCombinations) {
      throw ConfigError(Where(source, spec.where) + "[matrix] has more than " +
                        std::to_string(kMaxCombinations) + " combinations; vary fewer keys");
    }
  }
  std::vector<size_t> choice(spec.axes.size(), 0);
  for (size_t n = 0; n < total; ++n) {
    Combination combination;
    for (size_t a = 0; a < spec.axes.size(); ++a) {
      combination.values.emplace_back(spec.axes[a].key,
                                      ValueRef{ValueRef::Origin::kAxis, a, choice[a]});
    }
    if (!Excluded(spec, combination)) combinations.push_back(std::move(combination));
    for (size_t a = spec.axes.size(); a-- > 0;) {  // the last key varies fastest
      if (++choice[a] < spec.axes[a].values.size()) break;
      choice[a] = 0;
    }
  }
  return combinations;
}

}  // namespace

const MatrixAxis* MatrixSpec::FindAxis(const std::string& key) const {
  for (const MatrixAxis& axis : axes) {
    if (axis.key == key) return &axis;
  }
  return nullptr;
}

MatrixEntry ReadEntryTable(toml::table& table, const std::string& label,
                           const std::vector<std::string>& skip, const MatrixSpec& spec,
                           const std::string& source) {
  MatrixEntry entry;
  entry.where = table.source();
  FlattenEntry(table, "", label, spec, source, skip, entry);
  std::stable_sort(entry.items.begin(), entry.items.end(),
                   [&source](const MatrixItem& a, const MatrixItem& b) {
                     return PositionKey(a.where, source) < PositionKey(b.where, source);
                   });
  return entry;
}

const ValueRef* Combination::Find(const std::string& key) const {
  for (const auto& [existing, ref] : values) {
    if (existing == key) return &ref;
  }
  return nullptr;
}

MatrixSpec ReadMatrix(toml::table& root, const std::string& source,
                      const std::vector<std::string>& overrides) {
  MatrixSpec spec;
  toml::node* node = root.get("matrix");
  if (node == nullptr) {
    ReadAblation(root, source, spec);
    PinAblationOverrides(root, overrides, spec);
    return spec;
  }
  if (!node->is_table()) {
    throw ConfigError(Where(source, node->source()) + "'matrix' must be a table [matrix]");
  }
  toml::table& matrix = *node->as_table();
  spec.present = true;
  spec.where = matrix.source();
  ReadAxes(matrix, "", source, spec);
  std::stable_sort(spec.axes.begin(), spec.axes.end(),
                   [&source](const MatrixAxis& a, const MatrixAxis& b) {
                     return PositionKey(a.where, source) < PositionKey(b.where, source);
                   });
  CheckAxesDoNotOverlap(root, spec, source);
  spec.excludes = ReadEntries(matrix, "exclude", spec, source);
  spec.includes = ReadEntries(matrix, "include", spec, source);
  CheckExcludes(spec, source);
  CheckIncludes(root, spec, source);
  PinOverriddenKeys(root, overrides, spec);
  ReadAblation(root, source, spec);
  PinAblationOverrides(root, overrides, spec);
  return spec;
}

namespace {

std::vector<Combination> MatrixCombinations(const MatrixSpec& spec, const std::string& source) {
  if (!spec.present) return {Combination{}};
  std::vector<Combination> combinations = CartesianProduct(spec, source);
  const size_t original = combinations.size();
  for (size_t e = 0; e < spec.includes.size(); ++e) {
    const MatrixEntry& entry = spec.includes[e];
    bool extended = false;
    for (size_t c = 0; c < original; ++c) {
      if (!Extends(spec, combinations[c], entry)) continue;
      extended = true;
      for (size_t i = 0; i < entry.items.size(); ++i) {
        if (spec.FindAxis(entry.items[i].key) != nullptr) continue;
        Set(combinations[c], entry.items[i].key, {ValueRef::Origin::kInclude, e, i});
      }
    }
    if (extended) continue;
    Combination added;
    for (size_t i = 0; i < entry.items.size(); ++i) {
      added.values.emplace_back(entry.items[i].key, ValueRef{ValueRef::Origin::kInclude, e, i});
    }
    combinations.push_back(std::move(added));
  }
  if (!combinations.empty()) return combinations;
  if (spec.axes.empty()) {
    throw ConfigError(Where(source, spec.where) + "[matrix] lists no keys to vary: add one " +
                      "such as \"strategies.batching.micro_batch_size\" = [1, 2], or remove [matrix]");
  }
  throw ConfigError(Where(source, spec.where) + "[matrix] expands to zero cells: the exclude " +
                    "entries remove every combination; narrow them or add an include entry");
}

}  // namespace

std::vector<Combination> ExpandMatrix(const MatrixSpec& spec, const std::string& source) {
  std::vector<Combination> combinations = MatrixCombinations(spec, source);
  const std::vector<AblationVariant> variants = AblationVariants(spec.ablation);
  if (variants.empty()) return combinations;
  std::vector<Combination> crossed;
  for (const Combination& combination : combinations) {
    for (const AblationVariant& variant : variants) {
      Combination cell = combination;
      cell.ablation = variant.label;
      for (size_t s : variant.steps) {
        const auto& items = spec.ablation[s].entry.items;
        for (size_t i = 0; i < items.size(); ++i) {
          cell.values.emplace_back(items[i].key, ValueRef{ValueRef::Origin::kAblation, s, i});
        }
      }
      crossed.push_back(std::move(cell));
    }
  }
  return crossed;
}

const nlohmann::json& ValueOf(const MatrixSpec& spec, const ValueRef& ref) {
  if (ref.origin == ValueRef::Origin::kAxis) return spec.axes[ref.entry].values[ref.item];
  if (ref.origin == ValueRef::Origin::kAblation) {
    return spec.ablation[ref.entry].entry.items[ref.item].value;
  }
  return spec.includes[ref.entry].items[ref.item].value;
}

void AssignCombination(toml::table& root, MatrixSpec& spec, const Combination& combination,
                       const std::string& source) {
  for (const auto& [key, ref] : combination.values) {
    if (ref.origin == ValueRef::Origin::kAxis) {
      MatrixAxis& axis = spec.axes[ref.entry];
      if (axis.pinned) continue;  // the --set value is already in place
      config::AssignAtPath(root, key, std::move(*axis.nodes[ref.item]), axis.where, source);
    } else {
      MatrixItem& item = ref.origin == ValueRef::Origin::kAblation
                             ? spec.ablation[ref.entry].entry.items[ref.item]
                             : spec.includes[ref.entry].items[ref.item];
      config::AssignAtPath(root, key, std::move(*item.node), item.where, source);
    }
  }
  root.erase("matrix");
  root.erase("ablation");
}

}  // namespace memsweep::experiment
