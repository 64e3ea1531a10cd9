#include "core/experiment/cell.h"

#include <sstream>

#include "core/config/config_error.h"
#include "core/config/run_config_loader.h"
#include "core/experiment/sha256.h"
#include "core/experiment/toml_json.h"

namespace memsweep::experiment {
namespace {

constexpr size_t kHashDigits = 16;
constexpr const char* kMetadataTable = "cell";

std::string ValueText(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

template <typename T>
T Required(const toml::table& metadata, const char* key, const std::string& text_name) {
  const std::optional<T> value = metadata[key].value<T>();
  if (!value) {
    throw config::ConfigError(text_name + ": [cell] " + key +
                              " is missing or has the wrong type; write cells with CellToToml");
  }
  return *value;
}

}  // namespace

std::string Cell::Label() const {
  std::string label;
  for (const auto& [key, value] : params.items()) {
    label += (label.empty() ? "" : " ") + key + "=" + ValueText(value);
  }
  return label;
}

std::string Cell::Describe() const {
  const std::string label = Label();
  return "cell " + std::to_string(index) + " (" + (label.empty() ? "" : label + ", ") + "repeat " +
         std::to_string(repeat) + ", seed " + std::to_string(seed) + ")";
}

std::string CellHash(const toml::table& document) {
  return Sha256Hex(TomlToJson(document).dump()).substr(0, kHashDigits);
}

std::string CellToToml(const Cell& cell) {
  toml::table metadata{{"index", cell.index},   {"combination", cell.combination},
                       {"repeat", cell.repeat}, {"seed", static_cast<int64_t>(cell.seed)},
                       {"hash", cell.hash},     {"source", cell.source}};
  metadata.insert("params", JsonObjectToToml(cell.params));
  toml::table root = cell.document;
  if (root.contains(kMetadataTable)) {
    throw config::ConfigError(cell.source + ": a cell document cannot have its own [cell] table");
  }
  root.insert(kMetadataTable, std::move(metadata));
  std::ostringstream text;
  text << "# memsweep matrix " << cell.Describe() << "\n" << root << "\n";
  return text.str();
}

Cell CellFromToml(std::string_view text, const std::string& text_name) {
  toml::table root = config::ParseToml(text, text_name);
  const toml::table* metadata = root[kMetadataTable].as_table();
  if (metadata == nullptr) {
    throw config::ConfigError(text_name + ": no [cell] table; this is not a cell written by " +
                              "CellToToml");
  }
  Cell cell;
  cell.index = Required<int64_t>(*metadata, "index", text_name);
  cell.combination = Required<int64_t>(*metadata, "combination", text_name);
  cell.repeat = Required<int64_t>(*metadata, "repeat", text_name);
  cell.seed = static_cast<uint64_t>(Required<int64_t>(*metadata, "seed", text_name));
  cell.source = Required<std::string>(*metadata, "source", text_name);
  const std::string hash = Required<std::string>(*metadata, "hash", text_name);
  if (const toml::table* params = (*metadata)["params"].as_table())
    cell.params = TomlToJson(*params);
  root.erase(kMetadataTable);
  cell.document = std::move(root);
  cell.hash = CellHash(cell.document);
  if (cell.hash != hash) {
    throw config::ConfigError(text_name + ": the cell's content hashes to " + cell.hash +
                              ", not to its recorded hash " + hash +
                              "; the text was changed after it was written");
  }
  return cell;
}

}  // namespace memsweep::experiment
