#include "core/experiment/cell.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "core/config/config_error.h"
#include "core/config/dotted_keys.h"
#include "core/config/run_config_loader.h"
#include "core/experiment/sha256.h"
#include "core/experiment/toml_json.h"

namespace memsweep::experiment {
namespace {

constexpr size_t kHashDigits = 16;
constexpr const char* kMetadataTable = "cell";

// A string inside a list or table: bare when it is a plain word.
std::string InnerText(const nlohmann::json& value) {
  if (!value.is_string()) return ParamText(value);
  const std::string& text = value.get_ref<const std::string&>();
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_.+-/").find(c) !=
                                                             std::string_view::npos;
  });
  return plain ? text : value.dump();
}

bool IsIndex(const std::string& part) {
  return !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
}

// The name of the key whose dotted parts are `parts` when its last `n` parts are kept: without a
// trailing "plugin" (the slot names it); "" when the kept parts start with a list index or are a
// bare "plugin".
std::string EndingName(const std::vector<std::string>& parts, size_t n) {
  const size_t first = parts.size() - n;
  if (IsIndex(parts[first])) return "";
  size_t end = parts.size();
  if (parts.back() == "plugin" && n > 1) --end;
  if (parts[first] == "plugin" && end - first == 1) return "";
  std::string name;
  for (size_t i = first; i < end; ++i) name += (i == first ? "" : ".") + parts[i];
  return name;
}

// "file:line:column" of a position ("" without one); `fallback` names the file when the
// position does not.
std::string PositionText(const toml::source_region& region, const std::string& fallback) {
  if (region.begin.line == 0) return "";
  return (region.path && !region.path->empty() ? *region.path : fallback) + ":" +
         std::to_string(region.begin.line) + ":" + std::to_string(region.begin.column);
}

// Calls visit(dotted path, node, key position or nullptr) for every node under `node`, tables'
// entries by key, arrays' by index.
template <typename Visit>
void ForEachNode(const toml::node& node, const std::string& path, const Visit& visit) {
  if (const toml::table* table = node.as_table()) {
    for (auto&& [key, value] : *table) {
      const std::string at = path.empty() ? std::string(key.str()) : path + "." + std::string(key.str());
      visit(at, value, &key.source());
      ForEachNode(value, at, visit);
    }
  } else if (const toml::array* list = node.as_array()) {
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string at = path + "." + std::to_string(i);
      visit(at, *list->get(i), nullptr);
      ForEachNode(*list->get(i), at, visit);
    }
  }
}

template <typename T>
T Required(const toml::table& metadata, const char* key, const std::string& text_name) {
  // value_exact: a number of another type (1e30 for an integer) is the wrong type, not converted.
  const std::optional<T> value = metadata[key].value_exact<T>();
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
    label += (label.empty() ? "" : " ") + key + "=" + ParamText(value);
  }
  return label;
}

std::string Cell::Describe() const {
  const std::string label = Label();
  return "cell " + std::to_string(index) + " (" + (label.empty() ? "" : label + ", ") + "repeat " +
         std::to_string(repeat) + ", seed " + std::to_string(seed) + ")";
}

std::string Cell::InExperimentFile(const std::string& message) const {
  if (origins.empty()) return message;
  // Every key of `origins` is "<cell file>:<line>:<column>": find the file's name, then read
  // the position that follows it.
  const std::string file = origins.begin()->first.substr(
      0, origins.begin()->first.rfind(':', origins.begin()->first.rfind(':') - 1));
  std::string out;
  size_t done = 0;
  for (size_t at = message.find(file + ":"); at != std::string::npos;
       at = message.find(file + ":", at + 1)) {
    size_t end = at + file.size() + 1;
    const size_t line_end = message.find_first_not_of("0123456789", end);
    if (line_end == std::string::npos || line_end == end || message[line_end] != ':') continue;
    end = message.find_first_not_of("0123456789", line_end + 1);
    if (end == std::string::npos) end = message.size();
    if (end == line_end + 1) continue;
    const auto origin = origins.find(message.substr(at, end - at));
    if (origin == origins.end()) continue;
    out += message.substr(done, at - done) + origin->second;
    done = end;
  }
  return out + message.substr(done);
}

std::string ParamText(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    std::string text;
    for (const nlohmann::json& item : value) text += (text.empty() ? "" : ",") + InnerText(item);
    return "[" + text + "]";
  }
  if (!value.is_object()) return value.dump();
  std::string fields;
  for (const auto& [key, item] : value.items()) {
    if (key == "plugin" && item.is_string()) continue;
    fields += (fields.empty() ? "" : ",") + key + "=" + InnerText(item);
  }
  const auto plugin = value.find("plugin");
  if (plugin == value.end() || !plugin->is_string()) return "{" + fields + "}";
  return plugin->get<std::string>() + (fields.empty() ? "" : "(" + fields + ")");
}

std::map<std::string, std::string> ShortParamNames(const std::vector<std::string>& keys) {
  std::vector<std::vector<std::string>> parts;
  for (const std::string& key : keys) parts.push_back(config::SplitDottedKey(key));
  // Would `name` read as an ending of another key than the i-th?
  const auto taken = [&](const std::string& name, size_t i) {
    for (size_t j = 0; j < keys.size(); ++j) {
      if (keys[j] == keys[i]) continue;
      for (size_t n = 1; n <= parts[j].size(); ++n) {
        if (EndingName(parts[j], n) == name) return true;
      }
    }
    return false;
  };
  std::map<std::string, std::string> names;
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string chosen = keys[i];
    for (size_t n = 1; n <= parts[i].size(); ++n) {
      const std::string name = EndingName(parts[i], n);
      if (name.empty() || taken(name, i)) continue;
      chosen = name;
      break;
    }
    names[keys[i]] = chosen;
  }
  return names;
}

std::string CellHash(const toml::table& document) {
  return Sha256Hex(TomlToJson(document).dump()).substr(0, kHashDigits);
}

std::string CellToToml(const Cell& cell) {
  toml::table metadata{{"index", cell.index},   {"combination", cell.combination},
                       {"repeat", cell.repeat}, {"seed", static_cast<int64_t>(cell.seed)},
                       {"hash", cell.hash},     {"source", cell.source}};
  metadata.insert("params", JsonObjectToToml(cell.params));
  // Where each value was set, for the messages of whoever reads the file (a worker).
  toml::table origins;
  ForEachNode(cell.document, "", [&](const std::string& path, const toml::node& node,
                                     const toml::source_region*) {
    std::string origin = PositionText(node.source(), cell.source);
    if (!cell.origins.empty()) {  // a cell read from a cell file: its positions are that file's
      const auto known = cell.origins.find(origin);
      origin = known != cell.origins.end() ? known->second : "";
    }
    if (!origin.empty()) origins.insert(path, origin);
  });
  if (!origins.empty()) metadata.insert("origins", std::move(origins));
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
  std::map<std::string, std::string> origin_of_path;
  if (const toml::table* origins = (*metadata)["origins"].as_table()) {
    for (auto&& [path, origin] : *origins) {
      if (origin.is_string()) origin_of_path[std::string(path.str())] = origin.as_string()->get();
    }
  }
  root.erase(kMetadataTable);
  cell.document = std::move(root);
  ForEachNode(cell.document, "", [&](const std::string& path, const toml::node& node,
                                     const toml::source_region* key) {
    const auto origin = origin_of_path.find(path);
    if (origin == origin_of_path.end()) return;
    for (const toml::source_region* region : {&node.source(), key}) {
      if (region == nullptr) continue;
      const std::string here = PositionText(*region, text_name);
      if (!here.empty()) cell.origins.emplace(here, origin->second);
    }
  });
  cell.hash = CellHash(cell.document);
  if (cell.hash != hash) {
    throw config::ConfigError(text_name + ": the cell's content hashes to " + cell.hash +
                              ", not to its recorded hash " + hash +
                              "; the text was changed after it was written");
  }
  return cell;
}

}  // namespace memsweep::experiment
