// The [matrix] table of an experiment file, read and expanded into combinations: which dotted
// keys vary over which values (cartesian product, first key slowest), which combinations
// [[matrix.exclude]] removes and what [[matrix.include]] adds, with GitHub Actions semantics
// (docs/experiment-format.md, "Matrices"), and the [[ablation]] steps each combination is
// crossed with (docs/experiment-format.md, "Ablations").
//
//   toml::table root = config::ParseToml(text, path);   // --set overrides already applied
//   MatrixSpec spec = ReadMatrix(root, path, overrides);
//   for (const Combination& c : ExpandMatrix(spec, path)) AssignCombination(root, spec, c, path);
//
// A spec points into the document it was read from (so that values keep their file positions
// when moved into a cell); reading the same text with the same overrides gives the same spec,
// so a combination expanded from one parse applies to another.
#pragma once

#include <toml++/toml.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace memsweep::experiment {

// One dotted key the matrix varies.
struct MatrixAxis {
  std::string key;
  toml::source_region where;  // of the key
  std::vector<nlohmann::json> values;
  std::vector<toml::node*> nodes;  // the same values in the document
  bool pinned = false;  // fixed by a --set of the key: one value, already in the document
};

// One key/value of an exclude or include entry.
struct MatrixItem {
  std::string key;
  nlohmann::json value;
  toml::source_region where;  // of the value
  toml::node* node = nullptr;
};

// One [[matrix.exclude]] or [[matrix.include]] table.
struct MatrixEntry {
  std::vector<MatrixItem> items;
  toml::source_region where;
};

// One [[ablation]] table: a named change to the base configuration.
struct AblationStep {
  std::string name;
  MatrixEntry entry;  // the dotted keys and values the step sets
};

struct MatrixSpec {
  bool present = false;  // the document has a [matrix] table
  toml::source_region where;
  std::vector<MatrixAxis> axes;
  std::vector<MatrixEntry> excludes;
  std::vector<MatrixEntry> includes;  // entries and items made moot by --set are left out
  std::vector<AblationStep> ablation;  // [[ablation]], in file order (items --set pinned: dropped)
  toml::source_region ablation_where;

  const MatrixAxis* FindAxis(const std::string& key) const;
};

// Where a combination's value for one key comes from.
struct ValueRef {
  enum class Origin { kAxis, kInclude, kAblation };
  Origin origin = Origin::kAxis;
  size_t entry = 0;  // the axis, the include entry or the ablation step
  size_t item = 0;   // the axis value, or the entry's item
};

// One combination: dotted key -> value, matrix keys first (in file order), then keys that
// include entries added.
struct Combination {
  std::vector<std::pair<std::string, ValueRef>> values;
  // With [[ablation]]: "baseline", "+step", "all" or "all-step" (docs/experiment-format.md).
  std::string ablation;

  const ValueRef* Find(const std::string& key) const;
};

// One entry table (an include, exclude or ablation step) as dotted-key items in file order;
// top-level keys listed in `skip` are not items. `label` names the entry in messages.
MatrixEntry ReadEntryTable(toml::table& table, const std::string& label,
                           const std::vector<std::string>& skip, const MatrixSpec& spec,
                           const std::string& source);

// Reads root["matrix"] (absent: `present` is false) and root["ablation"]. `overrides` are the
// --set assignments already applied to `root`: a matrix key they set is pinned to the set value,
// include entries that set it to anything else are dropped, and ablation steps leave it alone.
// Throws config::ConfigError ("file:line:column: ...") for a malformed matrix or ablation.
MatrixSpec ReadMatrix(toml::table& root, const std::string& source,
                      const std::vector<std::string>& overrides);
// The combinations, in order: the cartesian product minus excludes, extended by includes, then
// the combinations includes added. Without a matrix: one empty combination. With [[ablation]]
// steps, each of those is crossed with the ablation variants (in the order of
// AblationVariants). Throws
// config::ConfigError when nothing is left.
std::vector<Combination> ExpandMatrix(const MatrixSpec& spec, const std::string& source);

const nlohmann::json& ValueOf(const MatrixSpec& spec, const ValueRef& ref);
// Moves the combination's values from the matrix into their places in `root` (the document the
// spec was read from) and removes [matrix] and [[ablation]].
void AssignCombination(toml::table& root, MatrixSpec& spec, const Combination& combination,
                       const std::string& source);

}  // namespace memsweep::experiment
