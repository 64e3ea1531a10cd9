#include "core/results/table_fit.h"

#include <algorithm>
#include <map>

#include "core/config/config_error.h"
#include "core/experiment/cell.h"

namespace memsweep::results {
namespace {

constexpr size_t kColumnGap = 2;  // FormatTable's two spaces between columns

bool StartsCodePoint(char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }

size_t CodePoints(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), StartsCodePoint));
}

// The first `width` display columns of `text`, and the rest.
std::pair<std::string, std::string> SplitAtWidth(const std::string& text, size_t width) {
  size_t columns = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (StartsCodePoint(text[i]) && columns++ == width) return {text.substr(0, i), text.substr(i)};
  }
  return {text, ""};
}

// One line (no line breaks) wrapped at spaces to `width`; words longer than that are broken.
std::vector<std::string> WrapLine(const std::string& line, size_t width) {
  std::vector<std::string> lines;
  std::string current;
  size_t start = 0;
  while (start <= line.size()) {
    const size_t end = std::min(line.find(' ', start), line.size());
    std::string word = line.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (!current.empty() && CodePoints(current) + 1 + CodePoints(word) <= width) {
      current += " " + word;
      continue;
    }
    if (!current.empty()) lines.push_back(current);
    while (CodePoints(word) > width) {
      auto [head, rest] = SplitAtWidth(word, width);
      lines.push_back(head);
      word = rest;
    }
    current = word;
  }
  if (!current.empty() || lines.empty()) lines.push_back(current);
  return lines;
}

// A table value wrapped to `width`: its line breaks kept, CR and tab as spaces (as FormatTable
// shows them).
std::string WrapValue(std::string value, size_t width) {
  std::replace(value.begin(), value.end(), '\r', ' ');
  std::replace(value.begin(), value.end(), '\t', ' ');
  std::string out;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t end = std::min(value.find('\n', start), value.size());
    for (const std::string& line : WrapLine(value.substr(start, end - start), width)) {
      out += (out.empty() ? "" : "\n") + line;
    }
    start = end + 1;
  }
  return out;
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string Abbreviation(const std::string& name) {
  for (const auto& [column, short_name] : kHeaderAbbreviations) {
    if (column == name) return std::string(short_name);
  }
  return name;
}

// Short headers for `names` (the columns shown side by side): dotted keys by their shortest
// unambiguous ending, then kHeaderAbbreviations; a header that two columns would share stays
// whole in both.
std::vector<std::string> ShortHeaders(const std::vector<std::string>& names) {
  const std::map<std::string, std::string> endings = experiment::ShortParamNames(names);
  std::vector<std::string> headers;
  for (const std::string& name : names) {
    headers.push_back(name.find('.') == std::string::npos ? Abbreviation(name) : endings.at(name));
  }
  for (size_t i = 0; i < headers.size(); ++i) {
    if (std::count(headers.begin(), headers.end(), headers[i]) == 1) continue;
    for (size_t j = 0; j < headers.size(); ++j) {
      if (headers[j] == headers[i] && j != i) headers[j] = names[j];
    }
    headers[i] = names[i];
  }
  return headers;
}

// Are the column's INTEGER values byte counts (FormatTable: "*_bytes" or TableOptions::bytes)?
bool IsBytesColumn(const std::string& name, const TableOptions& options) {
  constexpr std::string_view kSuffix = "_bytes";
  return (name.size() >= kSuffix.size() &&
          name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0) ||
         Contains(options.bytes, name);
}

bool HoldsText(const QueryResult& result, size_t column) {
  return std::any_of(result.kinds.begin(), result.kinds.end(), [column](const auto& kinds) {
    return kinds[column] == ValueKind::kText || kinds[column] == ValueKind::kBlob;
  });
}

// The column alone, as FormatTable prints it, without a header.
QueryResult OneColumn(const QueryResult& result, size_t column, const std::string& header) {
  QueryResult one;
  one.columns = {header};
  for (size_t r = 0; r < result.rows.size(); ++r) {
    one.AddRow({result.rows[r][column]}, {result.kinds[r][column]});
  }
  return one;
}

// How wide FormatTable prints each column's values (the rule of the column printed alone).
std::vector<size_t> ValueWidths(const QueryResult& result, const TableOptions& options) {
  std::vector<size_t> widths;
  for (size_t c = 0; c < result.columns.size(); ++c) {
    TableOptions alone;
    if (Contains(options.uncut, result.columns[c])) alone.uncut = {""};
    if (IsBytesColumn(result.columns[c], options)) alone.bytes = {""};
    const std::string text = FormatTable(OneColumn(result, c, ""), alone);
    const size_t rule = text.find('\n') + 1;
    widths.push_back(text.find('\n', rule) - rule);
  }
  return widths;
}

struct FitLayout {
  const QueryResult& result;
  const std::vector<size_t>& value_widths;
  const std::vector<bool>& text;

  size_t ColumnWidth(size_t column, const std::string& header) const {
    return std::max(value_widths[column], CodePoints(header));
  }
  // The width of `columns` (in order) with `headers`: the last, when it holds text, at least
  // kMinWrapWidth (it is wrapped to what is left).
  size_t Width(const std::vector<size_t>& columns, const std::vector<std::string>& headers) const {
    size_t width = 0;
    for (size_t i = 0; i < columns.size(); ++i) {
      size_t column = ColumnWidth(columns[i], headers[i]);
      if (i + 1 == columns.size() && text[columns[i]]) {
        column = std::max(CodePoints(headers[i]), std::min(column, kMinWrapWidth));
      }
      width += column + (i > 0 ? kColumnGap : 0);
    }
    return width;
  }
};

std::vector<std::string> NamesOf(const QueryResult& result, const std::vector<size_t>& columns) {
  std::vector<std::string> names;
  for (size_t column : columns) names.push_back(result.columns[column]);
  return names;
}

// The first column named `name` not in `taken`.
std::optional<size_t> ColumnNamed(const QueryResult& result, const std::string& name,
                                  const std::vector<size_t>& taken) {
  for (size_t c = 0; c < result.columns.size(); ++c) {
    if (result.columns[c] == name && std::find(taken.begin(), taken.end(), c) == taken.end()) {
      return c;
    }
  }
  return std::nullopt;
}

// No row has a value in the column (NULL or "" everywhere).
bool IsEmptyColumn(const QueryResult& result, size_t column) {
  return std::all_of(result.rows.begin(), result.rows.end(), [column](const auto& row) {
    return !row[column] || row[column]->empty();
  });
}

// Columns in the order they are considered: `importance`'s, then the rest in table order; columns
// without a value in any row after all others.
std::vector<size_t> ByImportance(const QueryResult& result,
                                 const std::vector<std::string>& importance) {
  std::vector<size_t> order;
  for (const std::string& name : importance) {
    while (std::optional<size_t> column = ColumnNamed(result, name, order)) order.push_back(*column);
  }
  for (size_t c = 0; c < result.columns.size(); ++c) {
    if (std::find(order.begin(), order.end(), c) == order.end()) order.push_back(c);
  }
  std::stable_partition(order.begin(), order.end(),
                        [&result](size_t column) { return !IsEmptyColumn(result, column); });
  return order;
}

// The most important columns that fit together (the first always), in table order.
std::vector<size_t> ChooseColumns(const FitLayout& fit_layout, const std::vector<size_t>& order,
                                  size_t width) {
  std::vector<size_t> chosen;
  for (size_t column : order) {
    std::vector<size_t> candidate = chosen;
    candidate.insert(std::upper_bound(candidate.begin(), candidate.end(), column), column);
    const std::vector<std::string> headers = ShortHeaders(NamesOf(fit_layout.result, candidate));
    if (!chosen.empty() && fit_layout.Width(candidate, headers) > width) continue;
    chosen = std::move(candidate);
  }
  return chosen;
}

}  // namespace

size_t TextWidth(const std::string& text) {
  size_t widest = 0, start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    widest = std::max(widest, CodePoints(std::string_view(text).substr(start, end - start)));
    start = end + 1;
  }
  return widest;
}

std::string WrapText(const std::string& text, size_t width) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    if (line.rfind("  ", 0) == 0 || CodePoints(line) <= width) {
      out += line;
    } else {
      for (const std::string& piece : WrapLine(line, width)) out += piece + "\n";
      out.pop_back();
    }
    if (end < text.size()) out += "\n";
    start = end + 1;
  }
  return out;
}

FittedTable FitTable(const QueryResult& result, const FitOptions& options) {
  const size_t width = options.width;
  if (options.columns.empty()) {
    std::string text = FormatTable(result, options.table);
    if (TextWidth(text) <= width) return {std::move(text), result, options.table, {}};
  }
  const std::vector<size_t> value_widths = ValueWidths(result, options.table);
  std::vector<bool> text(result.columns.size());
  for (size_t c = 0; c < text.size(); ++c) text[c] = HoldsText(result, c);
  const FitLayout fit_layout{result, value_widths, text};

  std::vector<size_t> all;
  if (options.columns.empty()) {
    for (size_t c = 0; c < result.columns.size(); ++c) all.push_back(c);
  } else {
    for (const std::string& name : ResolveColumns(options.columns, result.columns)) {
      all.push_back(*ColumnNamed(result, name, {}));
    }
  }
  // Full headers when every column fits with them (the last one wrapped), else short ones.
  const bool full_headers = fit_layout.Width(all, NamesOf(result, all)) <= width;
  std::vector<size_t> chosen = all;
  if (!full_headers && options.columns.empty()) {
    chosen = ChooseColumns(fit_layout, ByImportance(result, options.importance), width);
  }
  const std::vector<std::string> names = NamesOf(result, chosen);
  const std::vector<std::string> headers = full_headers ? names : ShortHeaders(names);

  FittedTable fitted;
  fitted.shown.columns = headers;
  for (size_t i = 0; i < chosen.size(); ++i) {
    if (Contains(options.table.uncut, names[i])) fitted.options.uncut.push_back(headers[i]);
    if (IsBytesColumn(names[i], options.table)) fitted.options.bytes.push_back(headers[i]);
  }
  // The last column's text, wrapped to what the others leave.
  const bool wrap = !chosen.empty() && text[chosen.back()];
  size_t wrap_width = 0;
  if (wrap) {
    size_t others = 0;
    for (size_t i = 0; i + 1 < chosen.size(); ++i) {
      others += fit_layout.ColumnWidth(chosen[i], headers[i]) + kColumnGap;
    }
    wrap_width = std::max(width > others ? width - others : 0, kMinWrapWidth);
    fitted.options.whole_last_column = true;
  }
  for (size_t r = 0; r < result.rows.size(); ++r) {
    std::vector<std::optional<std::string>> values;
    std::vector<ValueKind> kinds;
    for (size_t column : chosen) {
      values.push_back(result.rows[r][column]);
      kinds.push_back(result.kinds[r][column]);
    }
    if (wrap && values.back() && (kinds.back() == ValueKind::kText)) {
      values.back() = WrapValue(*values.back(), wrap_width);
    }
    fitted.shown.AddRow(std::move(values), std::move(kinds));
  }
  fitted.text = FormatTable(fitted.shown, fitted.options);
  for (size_t c = 0; c < result.columns.size(); ++c) {
    if (std::find(chosen.begin(), chosen.end(), c) == chosen.end() &&
        std::find(all.begin(), all.end(), c) != all.end()) {
      fitted.left_out.push_back(result.columns[c]);
    }
  }
  return fitted;
}

std::string LeftOutNote(const FittedTable& table, size_t width) {
  const size_t count = table.left_out.size();
  if (count == 0) return "";
  std::string names;
  for (const std::string& name : table.left_out) names += (names.empty() ? "" : ", ") + name;
  return WrapText("(" + std::to_string(count) + (count == 1 ? " column" : " columns") +
                      " left out to fit " + std::to_string(width) + " columns: " + names +
                      "; --wide shows every column, --columns a,b,c chooses them)",
                  width) +
         "\n";
}

std::vector<std::string> ResolveColumns(const std::vector<std::string>& requested,
                                        const std::vector<std::string>& available,
                                        const std::string& table) {
  std::vector<std::string> resolved;
  std::string problems;
  for (const std::string& name : requested) {
    if (Contains(available, name)) {
      resolved.push_back(name);
      continue;
    }
    // A dotted key's ending, or a short header.
    std::vector<std::string> matches;
    for (const std::string& column : available) {
      const bool ending = column.size() > name.size() &&
                          column.compare(column.size() - name.size(), name.size(), name) == 0 &&
                          column[column.size() - name.size() - 1] == '.';
      if ((ending || Abbreviation(column) == name) && !Contains(matches, column)) {
        matches.push_back(column);
      }
    }
    if (matches.size() == 1) {
      resolved.push_back(matches.front());
      continue;
    }
    problems += (problems.empty() ? "" : "; ") + ("'" + name + "' ") +
                (matches.empty() ? "is no column" : "could be several columns");
  }
  if (problems.empty()) return resolved;
  std::string list;
  for (const std::string& column : available) list += (list.empty() ? "" : ", ") + column;
  throw config::ConfigError("--columns: " + problems + " of " + table + "; its columns: " + list);
}

QueryResult SelectColumns(const QueryResult& result, const std::vector<std::string>& names) {
  std::vector<size_t> columns;
  for (const std::string& name : names) columns.push_back(*ColumnNamed(result, name, {}));
  QueryResult selected;
  selected.columns = names;
  for (size_t r = 0; r < result.rows.size(); ++r) {
    std::vector<std::optional<std::string>> values;
    std::vector<ValueKind> kinds;
    for (size_t column : columns) {
      values.push_back(result.rows[r][column]);
      kinds.push_back(result.kinds[r][column]);
    }
    selected.AddRow(std::move(values), std::move(kinds));
  }
  return selected;
}

}  // namespace memsweep::results
