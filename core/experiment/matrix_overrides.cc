#include "core/experiment/matrix_overrides.h"

#include <algorithm>

#include "core/config/config_error.h"
#include "core/config/dotted_keys.h"
#include "core/config/toml_overrides.h"
#include "core/experiment/toml_json.h"

namespace memsweep::experiment {

using config::CanonicalKey;
using config::ConfigError;
using config::FindAtPath;
using config::IsUnder;

bool ApplyMatrixOverride(toml::table& root, const std::string& assignment,
                         const std::string& source) {
  const std::string key = assignment.substr(0, assignment.find('='));
  if (!IsUnder(key, "matrix") || key == "matrix") return false;
  const std::string axis = key.substr(std::string("matrix.").size());
  if (axis.find('.') == std::string::npos || IsUnder(axis, "exclude") || IsUnder(axis, "include")) {
    return false;
  }
  toml::table parsed;
  config::ApplyOverride(parsed, assignment);
  toml::node& value = *FindAtPath(parsed, key);
  auto [it, inserted] = root.insert("matrix", toml::table{});
  if (!it->second.is_table()) return false;  // ReadMatrix reports it
  toml::table& matrix = *it->second.as_table();
  if (matrix.contains(axis)) {  // the quoted form: keep the key (and its position)
    matrix.insert_or_assign(axis, std::move(value));
  } else {
    config::AssignAtPath(matrix, axis, std::move(value), {}, source);
  }
  return true;
}

// A --set of a key the matrix varies (or of a table holding it) wins over the matrix: the key
// keeps the set value in every cell. Include entries then cannot set it to anything else. Keys
// are compared as paths into `root`, however each names list entries.
void PinOverriddenKeys(toml::table& root, const std::vector<std::string>& overrides,
                       MatrixSpec& spec) {
  for (const std::string& assignment : overrides) {
    const std::string written = assignment.substr(0, assignment.find('='));
    if (IsUnder(written, "matrix")) continue;  // changes the matrix itself
    const std::string key = CanonicalKey(root, written);
    for (MatrixAxis& axis : spec.axes) {
      const std::string axis_key = CanonicalKey(root, axis.key);
      if (IsUnder(axis_key, key)) {
        toml::node* node = FindAtPath(root, axis.key);
        if (node == nullptr) {
          throw ConfigError("--set " + assignment + ": leaves no value for '" + axis.key +
                            "', which [matrix] varies; set '" + axis.key + "' itself");
        }
        axis.values = {TomlToJson(*node)};
        axis.nodes = {node};
        axis.pinned = true;
      } else if (IsUnder(key, axis_key)) {
        throw ConfigError("--set " + assignment + ": [matrix] varies '" + axis.key +
                          "' as a whole; set '" + axis.key + "' instead");
      }
    }
    for (MatrixEntry& entry : spec.includes) {
      auto& items = entry.items;
      for (const MatrixItem& item : items) {
        const std::string item_key = CanonicalKey(root, item.key);
        if (spec.FindAxis(item.key) != nullptr || !IsUnder(key, item_key) || key == item_key) {
          continue;
        }
        throw ConfigError("--set " + assignment + ": [[matrix.include]] sets '" + item.key +
                          "' as a whole; set '" + item.key + "' instead");
      }
      items.erase(std::remove_if(items.begin(), items.end(),
                                 [&](const MatrixItem& item) {
                                   return spec.FindAxis(item.key) == nullptr &&
                                          IsUnder(CanonicalKey(root, item.key), key);
                                 }),
                  items.end());
    }
  }
  auto& includes = spec.includes;
  includes.erase(std::remove_if(includes.begin(), includes.end(),
                                [&spec](const MatrixEntry& entry) {
                                  for (const MatrixItem& item : entry.items) {
                                    const MatrixAxis* axis = spec.FindAxis(item.key);
                                    if (axis && axis->pinned && axis->values[0] != item.value) {
                                      return true;
                                    }
                                  }
                                  return false;
                                }),
                 includes.end());
}

}  // namespace memsweep::experiment
