#include "core/results/output_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/memory/byte_size.h"

namespace memsweep::results {
namespace {

constexpr size_t kMaxTableCellWidth = 60;

bool EndsWith(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Display width: UTF-8 code points (continuation bytes take no column).
size_t DisplayWidth(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// 6 significant digits without an exponent for ordinary magnitudes: 17503.3, 0.873421, 2.
std::string HumanReal(double value) {
  if (!std::isfinite(value)) return RealToText(value);
  const double magnitude = std::fabs(value);
  char buffer[64];
  if (magnitude != 0.0 && (magnitude < 1e-4 || magnitude >= 1e15)) {
    std::snprintf(buffer, sizeof buffer, "%.6g", value);
    return buffer;
  }
  const int exponent = magnitude == 0.0 ? 0 : static_cast<int>(std::floor(std::log10(magnitude)));
  const int decimals = std::max(0, 5 - exponent);
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  std::string text = buffer;
  if (text.find('.') != std::string::npos) {
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') text.pop_back();
  }
  return text == "-0" ? "0" : text;
}

// `text` for a table cell: line breaks as "\n" (or kept, `keep_lines`), CR and tab as spaces,
// cut to kMaxTableCellWidth columns unless `whole`.
std::string PrintableText(const std::string& text, bool whole = false, bool keep_lines = false) {
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += keep_lines ? "\n" : "\\n";
    } else if (c == '\r' || c == '\t') {
      out += ' ';
    } else {
      out += c;
    }
  }
  if (whole || DisplayWidth(out) <= kMaxTableCellWidth) return out;
  std::string cut;
  size_t width = 0;
  for (char c : out) {
    const bool starts_code_point = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_code_point && ++width > kMaxTableCellWidth - 3) break;
    cut += c;
  }
  return cut + "...";
}

// `whole`: never cut (TableOptions); `keep_lines`: line breaks kept (a whole last column).
// `bytes`: a column of byte counts (named "*_bytes" or in TableOptions::bytes).
std::string TableCell(const std::optional<std::string>& value, ValueKind kind, bool bytes,
                      bool whole = false, bool keep_lines = false) {
  if (!value) return "";
  switch (kind) {
    case ValueKind::kInteger:
      if (bytes) return memory::FormatBytes(std::stoll(*value));
      return *value;
    case ValueKind::kReal: return HumanReal(std::strtod(value->c_str(), nullptr));
    default: return PrintableText(*value, whole, keep_lines);
  }
}

bool IsCut(const std::optional<std::string>& value, ValueKind kind) {
  if (!value || kind == ValueKind::kInteger || kind == ValueKind::kReal) return false;
  return DisplayWidth(PrintableText(*value, /*whole=*/true)) > kMaxTableCellWidth;
}

// The widest line of `text`.
size_t WidestLine(const std::string& text) {
  size_t widest = 0, start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    widest = std::max(widest, DisplayWidth(text.substr(start, end - start)));
    start = end + 1;
  }
  return widest;
}

// Which columns TableOptions::uncut names.
std::vector<bool> UncutColumns(const QueryResult& result, const TableOptions& options) {
  std::vector<bool> uncut(result.columns.size());
  for (size_t c = 0; c < uncut.size(); ++c) {
    uncut[c] = std::find(options.uncut.begin(), options.uncut.end(), result.columns[c]) !=
               options.uncut.end();
  }
  return uncut;
}

bool IsNumeric(ValueKind kind) { return kind == ValueKind::kInteger || kind == ValueKind::kReal; }

std::string CsvField(const std::optional<std::string>& value) {
  if (!value) return "";
  if (value->find_first_of(",\"\r\n") == std::string::npos) return *value;
  std::string quoted = "\"";
  for (char c : *value) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

nlohmann::ordered_json JsonValue(const std::optional<std::string>& value, ValueKind kind) {
  if (!value) return nullptr;
  switch (kind) {
    case ValueKind::kInteger: return std::stoll(*value);
    case ValueKind::kReal: {
      const double number = std::strtod(value->c_str(), nullptr);
      if (!std::isfinite(number)) return nullptr;
      return number;
    }
    default: return *value;
  }
}

}  // namespace

std::optional<OutputFormat> ParseOutputFormat(std::string_view name) {
  if (name == "table") return OutputFormat::kTable;
  if (name == "csv") return OutputFormat::kCsv;
  if (name == "json") return OutputFormat::kJson;
  return std::nullopt;
}

std::string FormatTable(const QueryResult& result, const TableOptions& options) {
  const size_t columns = result.columns.size();
  const std::vector<bool> uncut = UncutColumns(result, options);
  std::vector<bool> bytes(columns);
  for (size_t c = 0; c < columns; ++c) {
    bytes[c] = EndsWith(result.columns[c], "_bytes") ||
               std::find(options.bytes.begin(), options.bytes.end(), result.columns[c]) !=
                   options.bytes.end();
  }
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> widths(columns);
  std::vector<bool> right_aligned(columns, true);
  for (size_t c = 0; c < columns; ++c) widths[c] = DisplayWidth(result.columns[c]);
  for (size_t r = 0; r < result.rows.size(); ++r) {
    std::vector<std::string> line;
    for (size_t c = 0; c < columns; ++c) {
      const ValueKind kind = result.kinds[r][c];
      const bool whole = options.whole_last_column && c + 1 == columns;
      line.push_back(TableCell(result.rows[r][c], kind, bytes[c], whole || uncut[c],
                               /*keep_lines=*/whole));
      // A whole last column runs past its rule: nothing follows it.
      widths[c] = std::max(widths[c], whole ? std::min(WidestLine(line.back()), kMaxTableCellWidth)
                                            : DisplayWidth(line.back()));
      if (kind != ValueKind::kNull && !IsNumeric(kind)) right_aligned[c] = false;
    }
    cells.push_back(std::move(line));
  }
  const auto append_line = [&](std::string& out, const std::vector<std::string>& line) {
    std::string text;
    size_t indent = 0;  // where the last column starts
    for (size_t c = 0; c < columns; ++c) {
      if (c > 0) text += "  ";
      if (c + 1 == columns) indent = DisplayWidth(text);
      const size_t width = DisplayWidth(line[c]);
      const std::string padding(widths[c] > width ? widths[c] - width : 0, ' ');
      text += right_aligned[c] ? padding + line[c] : line[c] + padding;
    }
    // A whole last column's further lines start under its first.
    size_t start = 0;
    while (start <= text.size()) {
      const size_t end = std::min(text.find('\n', start), text.size());
      std::string piece = text.substr(start, end - start);
      piece.erase(piece.find_last_not_of(' ') + 1);
      out += (start == 0 || piece.empty() ? "" : std::string(indent, ' ')) + piece + "\n";
      start = end + 1;
    }
  };
  std::string out;
  append_line(out, result.columns);
  std::vector<std::string> rule;
  for (size_t c = 0; c < columns; ++c) rule.push_back(std::string(widths[c], '-'));
  append_line(out, rule);
  for (const auto& line : cells) append_line(out, line);
  return out;
}

std::string FormatCsv(const QueryResult& result) {
  const auto append_line = [](std::string& out,
                              const std::vector<std::optional<std::string>>& line) {
    for (size_t c = 0; c < line.size(); ++c) {
      if (c > 0) out += ',';
      out += CsvField(line[c]);
    }
    out += "\r\n";
  };
  std::string out;
  append_line(out, {result.columns.begin(), result.columns.end()});
  for (const auto& row : result.rows) append_line(out, row);
  return out;
}

nlohmann::ordered_json QueryResultToJson(const QueryResult& result) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (size_t r = 0; r < result.rows.size(); ++r) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (size_t c = 0; c < result.columns.size(); ++c) {
      object[result.columns[c]] = JsonValue(result.rows[r][c], result.kinds[r][c]);
    }
    rows.push_back(std::move(object));
  }
  return rows;
}

size_t CutTableValues(const QueryResult& result, const TableOptions& options) {
  size_t cut = 0;
  const size_t columns = result.columns.size();
  const std::vector<bool> uncut = UncutColumns(result, options);
  for (size_t r = 0; r < result.rows.size(); ++r) {
    for (size_t c = 0; c < columns; ++c) {
      if ((options.whole_last_column && c + 1 == columns) || uncut[c]) continue;
      if (IsCut(result.rows[r][c], result.kinds[r][c])) ++cut;
    }
  }
  return cut;
}

std::string FormatQueryResult(const QueryResult& result, OutputFormat format) {
  switch (format) {
    case OutputFormat::kTable: return FormatTable(result, TableOptions{.whole_last_column = true});
    case OutputFormat::kCsv: return FormatCsv(result);
    case OutputFormat::kJson:
      return QueryResultToJson(result).dump(2, ' ', false,
                                            nlohmann::json::error_handler_t::replace) +
             "\n";
  }
  return "";
}

}  // namespace memsweep::results
