// Reads the data tables of a memsweep HTML report back: each <table data-source="..."> with its
// rows and cells (attributes and text), for tests that compare the page with the database.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace memsweep::testing_support {

struct HtmlCell {
  std::map<std::string, std::string> attributes;
  std::string text;  // tags removed, entities decoded
};
struct HtmlTable {
  std::string source;
  std::vector<std::vector<HtmlCell>> rows;
};

inline std::string DecodeEntities(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out += text[i];
      continue;
    }
    const size_t end = text.find(';', i);
    const std::string name = text.substr(i + 1, end - i - 1);
    if (name == "amp") out += '&';
    else if (name == "lt") out += '<';
    else if (name == "gt") out += '>';
    else if (name == "quot") out += '"';
    else if (name == "#39") out += '\'';
    else out += "&" + name + ";";
    i = end;
  }
  return out;
}

inline std::map<std::string, std::string> ParseAttributes(const std::string& tag) {
  std::map<std::string, std::string> attributes;
  size_t at = tag.find(' ');
  while (at != std::string::npos && at < tag.size()) {
    const size_t eq = tag.find("=\"", at);
    if (eq == std::string::npos) break;
    const size_t close = tag.find('"', eq + 2);
    std::string name = tag.substr(at, eq - at);
    name.erase(0, name.find_first_not_of(' '));
    attributes[name] = DecodeEntities(tag.substr(eq + 2, close - eq - 2));
    at = close + 1;
  }
  return attributes;
}

inline std::string StripTags(const std::string& html) {
  std::string out;
  bool in_tag = false;
  for (char c : html) {
    if (c == '<') in_tag = true;
    else if (c == '>') in_tag = false;
    else if (!in_tag) out += c;
  }
  return DecodeEntities(out);
}

inline std::vector<HtmlTable> ReadTables(const std::string& html) {
  std::vector<HtmlTable> tables;
  for (size_t at = html.find("<table"); at != std::string::npos; at = html.find("<table", at + 1)) {
    const size_t tag_end = html.find('>', at);
    const size_t end = html.find("</table>", at);
    HtmlTable table;
    table.source = ParseAttributes(html.substr(at, tag_end - at))["data-source"];
    for (size_t row = html.find("<tr", tag_end); row != std::string::npos && row < end;
         row = html.find("<tr", row + 1)) {
      const size_t row_end = html.find("</tr>", row);
      std::vector<HtmlCell> cells;
      for (size_t td = html.find("<td", row); td != std::string::npos && td < row_end;
           td = html.find("<td", td + 1)) {
        const size_t open_end = html.find('>', td);
        const size_t close = html.find("</td>", open_end);
        cells.push_back({ParseAttributes(html.substr(td, open_end - td)),
                         StripTags(html.substr(open_end + 1, close - open_end - 1))});
      }
      if (!cells.empty()) table.rows.push_back(std::move(cells));
    }
    tables.push_back(std::move(table));
  }
  return tables;
}

// The text of the <svg> with this id ("" when absent).
inline std::string SvgById(const std::string& html, const std::string& id) {
  const size_t at = html.find("<svg class=\"chart\" id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</svg>", at) - at);
}

inline size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace memsweep::testing_support
