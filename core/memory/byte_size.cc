#include "core/memory/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace memsweep::memory {
namespace {

std::string Lower(std::string_view text) {
  std::string out;
  for (char c : text) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

}  // namespace

std::optional<int64_t> ParseBytes(std::string_view text) {
  std::string s(text);
  size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return std::nullopt;
  s = s.substr(begin);
  char* end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(value) || value < 0) return std::nullopt;
  std::string unit = Lower(std::string_view(end));
  unit.erase(0, unit.find_first_not_of(" \t"));
  unit.erase(unit.find_last_not_of(" \t") + 1);
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1.0},          {"b", 1.0},          {"kib", 1024.0},    {"mib", 1048576.0},
      {"gib", 1073741824.0}, {"tib", 1099511627776.0}, {"kb", 1e3}, {"mb", 1e6},
      {"gb", 1e9},        {"tb", 1e12}};
  for (const auto& [name, scale] : kUnits) {
    if (unit == name) return static_cast<int64_t>(std::llround(value * scale));
  }
  return std::nullopt;
}

std::string FormatBytes(int64_t bytes) {
  const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  const bool negative = bytes < 0;
  double value = std::fabs(static_cast<double>(bytes));
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char buffer[48];
  if (unit == 0) {
    std::snprintf(buffer, sizeof buffer, "%s%lld B", negative ? "-" : "",
                  static_cast<long long>(std::fabs(static_cast<double>(bytes))));
  } else {
    std::snprintf(buffer, sizeof buffer, "%s%.2f %s", negative ? "-" : "", value, kUnits[unit]);
  }
  return buffer;
}

}  // namespace memsweep::memory
