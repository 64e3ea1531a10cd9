// CellSelector: "key=value[,key=value]" naming one cell of an experiment by its matrix
// parameters — the syntax of `[experiment] reference` and of `memsweep compare --baseline`.
// A value matches a parameter when it is the same text (strings with or without JSON quotes) or
// the same number ("8" matches 8 and 8.0). A key may also reach into a table-valued parameter:
// "strategies.sharding.plugin=zero3" matches a cell whose "strategies.sharding" value is a table
// with plugin = "zero3" (matrices that vary whole tables, e.g. a plugin with its options).
//
//   CellSelector selector = ParseCellSelector("strategies.checkpointing.plugin=none");  // throws
//   bool hit = selector.Matches(cell.params);   // params: {"dotted.key": value}
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace memsweep::experiment {

struct CellSelector {
  std::string text;  // as written
  std::vector<std::pair<std::string, std::string>> pairs;  // key, value text

  bool Matches(const nlohmann::json& params) const;
};

// Throws std::invalid_argument ("expected key=value, got 'x'") for an empty selector, a pair
// without '=' or an empty key.
CellSelector ParseCellSelector(const std::string& text);

// The value `key` names in `params`: the parameter itself, or a field inside a table-valued
// parameter whose key is a dotted prefix of `key`; null when there is none.
const nlohmann::json* FindParam(const nlohmann::json& params, const std::string& key);

// True when `text` names `value` (see above).
bool ParamValueMatches(const nlohmann::json& value, const std::string& text);

}  // namespace memsweep::experiment
