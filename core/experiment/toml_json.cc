#include "core/experiment/toml_json.h"

#include <cmath>
#include <sstream>

namespace memsweep::experiment {
namespace {

nlohmann::json FloatToJson(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

void AppendJson(toml::array& out, const nlohmann::json& value);

void InsertJson(toml::table& out, const std::string& key, const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object:
      out.insert_or_assign(key, JsonObjectToToml(value));
      return;
    case nlohmann::json::value_t::array: {
      toml::array array;
      for (const auto& item : value) AppendJson(array, item);
      out.insert_or_assign(key, std::move(array));
      return;
    }
    case nlohmann::json::value_t::string:
      out.insert_or_assign(key, value.get<std::string>());
      return;
    case nlohmann::json::value_t::boolean:
      out.insert_or_assign(key, value.get<bool>());
      return;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      out.insert_or_assign(key, value.get<int64_t>());
      return;
    case nlohmann::json::value_t::number_float:
      out.insert_or_assign(key, value.get<double>());
      return;
    default:
      return;  // null, binary, discarded: nothing TOML can hold
  }
}

void AppendJson(toml::array& out, const nlohmann::json& value) {
  // Reuse the table conversion through a one-key table, then move the node over.
  toml::table holder;
  InsertJson(holder, "v", value);
  if (toml::node* node = holder.get("v")) {
    std::move(*node).visit([&out](auto&& concrete) { out.push_back(std::move(concrete)); });
  }
}

}  // namespace

nlohmann::json TomlToJson(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: {
      nlohmann::json object = nlohmann::json::object();
      for (auto&& [key, child] : *node.as_table())
        object[std::string(key.str())] = TomlToJson(child);
      return object;
    }
    case toml::node_type::array: {
      nlohmann::json array = nlohmann::json::array();
      for (const toml::node& child : *node.as_array()) array.push_back(TomlToJson(child));
      return array;
    }
    case toml::node_type::string:
      return node.as_string()->get();
    case toml::node_type::integer:
      return node.as_integer()->get();
    case toml::node_type::floating_point:
      return FloatToJson(node.as_floating_point()->get());
    case toml::node_type::boolean:
      return node.as_boolean()->get();
    default: {
      std::ostringstream text;
      node.visit([&text](auto&& concrete) { text << concrete; });
      return text.str();
    }
  }
}

toml::table JsonObjectToToml(const nlohmann::json& object) {
  toml::table table;
  for (const auto& [key, value] : object.items()) InsertJson(table, key, value);
  return table;
}

}  // namespace memsweep::experiment
