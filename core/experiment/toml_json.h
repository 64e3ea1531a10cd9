// Converting TOML documents to JSON and back: JSON is how cells are compared, hashed (nlohmann
// sorts keys, so the dump is canonical) and reported.
//
//   nlohmann::json j = TomlToJson(root);           // tables -> objects, arrays -> arrays
//   std::string canonical = j.dump();               // same content -> same text, any key order
//   toml::table t = JsonObjectToToml(j);            // back, e.g. for a cell's parameters
#pragma once

#include <toml++/toml.h>

#include <nlohmann/json.hpp>

namespace memsweep::experiment {

// Strings, integers (int64), floats (double; inf/nan as the strings "inf", "-inf", "nan"),
// booleans, arrays, tables; dates and times become their TOML text.
nlohmann::json TomlToJson(const toml::node& node);
// The inverse for JSON objects (integers, floats, strings, booleans, arrays, objects; null is
// not representable in TOML and is skipped).
toml::table JsonObjectToToml(const nlohmann::json& object);

}  // namespace memsweep::experiment
