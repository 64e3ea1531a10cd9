#include "core/experiment/cell_selector.h"

#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace memsweep::experiment {
namespace {

std::string Trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

}  // namespace

const nlohmann::json* FindParam(const nlohmann::json& params, const std::string& key) {
  const auto exact = params.find(key);
  if (exact != params.end()) return &*exact;
  for (const auto& [name, value] : params.items()) {
    if (!value.is_object() || key.size() <= name.size() + 1 || key.compare(0, name.size(), name) != 0 ||
        key[name.size()] != '.') {
      continue;
    }
    if (const nlohmann::json* inner = FindParam(value, key.substr(name.size() + 1))) return inner;
  }
  return nullptr;
}

bool CellSelector::Matches(const nlohmann::json& params) const {
  for (const auto& [key, value] : pairs) {
    const nlohmann::json* found = FindParam(params, key);
    if (found == nullptr || !ParamValueMatches(*found, value)) return false;
  }
  return true;
}

CellSelector ParseCellSelector(const std::string& text) {
  CellSelector selector;
  selector.text = text;
  std::stringstream pairs(text);
  std::string pair;
  while (std::getline(pairs, pair, ',')) {
    const size_t equals = pair.find('=');
    if (equals == std::string::npos || Trim(pair.substr(0, equals)).empty()) {
      throw std::invalid_argument("'" + text + "': expected key=value[,key=value], got '" + pair +
                                  "'");
    }
    selector.pairs.emplace_back(Trim(pair.substr(0, equals)), Trim(pair.substr(equals + 1)));
  }
  if (selector.pairs.empty()) {
    throw std::invalid_argument("'" + text + "': expected key=value[,key=value]");
  }
  return selector;
}

bool ParamValueMatches(const nlohmann::json& value, const std::string& text) {
  if (value.is_string()) return value.get<std::string>() == text || value.dump() == text;
  if (value.is_number()) {
    char* end = nullptr;
    const double number = std::strtod(text.c_str(), &end);
    return end != text.c_str() && *end == '\0' && number == value.get<double>();
  }
  return value.dump() == text;
}

}  // namespace memsweep::experiment
