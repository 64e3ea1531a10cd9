#include "core/config/plugin_params_validation.h"

#include <optional>

#include "core/config/config_error.h"
#include "core/config/toml_reader.h"
#include "core/memory/byte_size.h"

namespace memsweep::config {
namespace {

// Converts one TOML value to the parameter's type, or returns nullopt.
std::optional<PluginParams::Value> Convert(const toml::node& node, MemsweepParamType type) {
  switch (type) {
    case MEMSWEEP_PARAM_INT:
      if (node.is_integer()) return PluginParams::Value(node.as_integer()->get());
      return std::nullopt;
    case MEMSWEEP_PARAM_FLOAT:
      if (node.is_floating_point()) return PluginParams::Value(node.as_floating_point()->get());
      if (node.is_integer()) {
        return PluginParams::Value(static_cast<double>(node.as_integer()->get()));
      }
      return std::nullopt;
    case MEMSWEEP_PARAM_BOOL:
      if (node.is_boolean()) return PluginParams::Value(node.as_boolean()->get());
      return std::nullopt;
    case MEMSWEEP_PARAM_STRING:
      if (node.is_string()) return PluginParams::Value(node.as_string()->get());
      return std::nullopt;
    case MEMSWEEP_PARAM_BYTES:
      if (node.is_integer() && node.as_integer()->get() >= 0) {
        return PluginParams::Value(node.as_integer()->get());
      }
      if (node.is_string()) {
        if (auto bytes = memory::ParseBytes(node.as_string()->get())) {
          return PluginParams::Value(*bytes);
        }
      }
      return std::nullopt;
    case MEMSWEEP_PARAM_STRINGS: {
      if (node.is_string()) {
        return PluginParams::Value(std::vector<std::string>{node.as_string()->get()});
      }
      const toml::array* list = node.as_array();
      if (list == nullptr) return std::nullopt;
      std::vector<std::string> strings;
      for (const toml::node& item : *list) {
        if (!item.is_string()) return std::nullopt;
        strings.push_back(item.as_string()->get());
      }
      return PluginParams::Value(std::move(strings));
    }
  }
  return std::nullopt;
}

const char* Expected(MemsweepParamType type) {
  switch (type) {
    case MEMSWEEP_PARAM_INT: return "an integer";
    case MEMSWEEP_PARAM_FLOAT: return "a number";
    case MEMSWEEP_PARAM_BOOL: return "true or false";
    case MEMSWEEP_PARAM_STRING: return "a string";
    case MEMSWEEP_PARAM_BYTES: return "a size such as \"64MiB\" or a byte count";
    case MEMSWEEP_PARAM_STRINGS: return "a string or a list of strings, such as [\"q_proj\", \"v_proj\"]";
  }
  return "?";
}

}  // namespace

PluginParams ValidateParams(const plugin::PluginLibrary& library, const toml::table& table,
                            const std::string& source, const std::string& section) {
  std::vector<std::string> allowed = {"plugin"};
  for (const auto& spec : library.params()) allowed.push_back(spec.name);
  const std::string owner = section + " (plugin '" + library.name() + "')";
  config::TableReader reader(source, owner, table, allowed);  // rejects unknown keys

  PluginParams params;
  for (const auto& spec : library.params()) {
    const toml::node* node = table.get(spec.name);
    if (node == nullptr) {
      if (spec.required) {
        throw config::ConfigError(config::Where(source, table.source()) + owner +
                                  ": required parameter '" + spec.name + "' is missing (" +
                                  spec.doc + ")");
      }
      const toml::table parsed = toml::parse("v = " + spec.default_literal);
      params.Set(spec.name, *Convert(*parsed.get("v"), spec.type));
      continue;
    }
    auto value = Convert(*node, spec.type);
    if (!value) {
      throw config::ConfigError(reader.At(spec.name) + " must be " + Expected(spec.type));
    }
    params.Set(spec.name, *value);
  }
  return params;
}

}  // namespace memsweep::config
