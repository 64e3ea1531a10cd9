#include "core/config/toml_reader.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/config/config_error.h"

namespace memsweep::config {

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

namespace {

const char* TypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    default: return "a date/time";
  }
}

}  // namespace

std::string ReadExperimentFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw ConfigError(path + ": is a directory, not an experiment file; give the path of its "
                      ".toml file");
  }
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open the experiment file; check the path");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(path + ": cannot read the experiment file; check the path");
  return text.str();
}

std::string Where(const std::string& source, const toml::source_region& region) {
  std::ostringstream out;
  out << (region.path && !region.path->empty() ? *region.path : source);
  if (region.begin.line > 0) out << ":" << region.begin.line << ":" << region.begin.column;
  out << ": ";
  return out.str();
}

TableReader::TableReader(std::string source, std::string section, const toml::table& table,
                         std::vector<std::string> allowed)
    : source_(std::move(source)), section_(std::move(section)), table_(table) {
  for (auto&& [key, node] : table_) {
    const std::string name(key.str());
    bool known = false;
    for (const auto& a : allowed) known = known || a == name;
    if (known) continue;
    throw ConfigError(Where(source_, key.source()) + "unknown key '" + name + "' in " + section_ +
                      "; allowed keys: " + Join(allowed));
  }
}

std::string TableReader::At(const std::string& key) const {
  const toml::node* node = table_.get(key);
  return Where(source_, node ? node->source() : table_.source()) + section_ + " " + key;
}

void TableReader::TypeError(const std::string& key, const char* expected) const {
  throw ConfigError(At(key) + " must be " + expected + " (found " + TypeName(*table_.get(key)) +
                    ")");
}

void TableReader::Read(const std::string& key, int64_t& out) const {
  const toml::node* node = table_.get(key);
  if (node == nullptr) return;
  if (!node->is_integer()) TypeError(key, "an integer");
  out = node->as_integer()->get();
}

void TableReader::Read(const std::string& key, int& out) const {
  int64_t value = out;
  Read(key, value);
  out = static_cast<int>(value);
}

void TableReader::Read(const std::string& key, uint64_t& out) const {
  int64_t value = static_cast<int64_t>(out);
  Read(key, value);
  if (value < 0) throw ConfigError(At(key) + " must not be negative");
  out = static_cast<uint64_t>(value);
}

void TableReader::Read(const std::string& key, double& out) const {
  const toml::node* node = table_.get(key);
  if (node == nullptr) return;
  if (node->is_integer()) {
    out = static_cast<double>(node->as_integer()->get());
  } else if (node->is_floating_point()) {
    out = node->as_floating_point()->get();
  } else {
    TypeError(key, "a number");
  }
}

void TableReader::Read(const std::string& key, bool& out) const {
  const toml::node* node = table_.get(key);
  if (node == nullptr) return;
  if (!node->is_boolean()) TypeError(key, "true or false");
  out = node->as_boolean()->get();
}

void TableReader::Read(const std::string& key, std::string& out) const {
  const toml::node* node = table_.get(key);
  if (node == nullptr) return;
  if (!node->is_string()) TypeError(key, "a string");
  out = node->as_string()->get();
}

std::optional<size_t> TableReader::ReadChoice(const std::string& key,
                                              const std::vector<std::string>& choices) const {
  if (!Has(key)) return std::nullopt;
  std::string value;
  Read(key, value);
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choices[i] == value) return i;
  }
  throw ConfigError(At(key) + " = \"" + value + "\" is not one of: " + Join(choices));
}

}  // namespace memsweep::config
