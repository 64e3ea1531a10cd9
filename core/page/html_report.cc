#include "core/page/html_report.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "core/memory/byte_size.h"
#include "core/page/report_charts.h"
#include "core/page/svg_chart.h"
#include "core/run_files/run_report.h"
#include "core/results/table_fit.h"
#include "core/train/row_preview.h"

#ifndef MEMSWEEP_VERSION
#define MEMSWEEP_VERSION "unknown"
#endif

namespace memsweep::page {
namespace {

using results::QueryResult;

constexpr const char* kStyle = R"css(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #1a1a1a; background: #fff; }
header, section, footer { max-width: 1480px; margin: 0 auto; padding: 0 24px; }
p, details { max-width: 1132px; }
header { padding-top: 18px; }
h1 { font-size: 24px; margin: 8px 0 2px; }
h2 { font-size: 20px; margin: 34px 0 4px; padding-top: 12px; border-top: 3px solid #08306b; }
h3 { font-size: 15px; margin: 22px 0 6px; }
.meta, .explain { color: #444; margin: 2px 0 8px; }
nav a { margin-right: 14px; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 12.5px; }
th, td { padding: 3px 5px; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top; }
th { background: #f0f0f0; position: sticky; top: 0; }
table.sortable th { cursor: pointer; }
table.sortable th::after { content: " \2195"; color: #888; }
span.kv { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.bad td { background: #fff0f0; }
td.error { min-width: 200px; max-width: 460px; white-space: pre-wrap; font-size: 12px; color: #7a0000; }
.status-ok { color: #0a5c2a; font-weight: 600; }
.status-oom, .status-failed, .status-timeout { color: #a50f15; font-weight: 700; }
.scroll { overflow-x: auto; }
details { margin: 2px 0 10px; }
summary { cursor: pointer; color: #08306b; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
svg.chart { display: block; margin: 6px 0 4px; max-width: 100%; height: auto; }
svg .chart-title { font-size: 15px; font-weight: 600; fill: #1a1a1a; }
svg .tick, svg .legend, svg .point-label { font-size: 12px; fill: #333; }
svg .axis-label { font-size: 13px; fill: #1a1a1a; }
svg .note { font-size: 11px; fill: #333; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
svg .grid { stroke: #e6e6e6; }
svg .axis { stroke: #333; }
svg .limit { stroke: #a50f15; stroke-width: 1.5; stroke-dasharray: 6 4; }
svg .limit-label { font-size: 12px; fill: #a50f15; font-weight: 600; paint-order: stroke;
                   stroke: #fff; stroke-width: 3px; }
svg g.series.off { display: none; }
svg g.legend-entry { cursor: pointer; }
svg g.legend-entry.off { opacity: 0.35; }
)css";

// Sorting, legend toggles, and a check a test reads back from the page (charts' marks drawn,
// resources fetched, script errors).
constexpr const char* kScript = R"js(
(function () {
  var errors = [];
  window.addEventListener('error', function (e) {
    errors.push(String(e.message));
    document.documentElement.dataset.errors = errors.join(' | ');
  });
  // The value a cell sorts by: its data-v (the database's value) as a number when it is one.
  function key(td) {
    var v = td.dataset.v === undefined ? td.textContent : td.dataset.v;
    var n = Number(v);
    return v !== '' && !isNaN(n) ? n : v;
  }
  document.querySelectorAll('table.sortable th').forEach(function (th, column) {
    th.addEventListener('click', function () {
      var tbody = th.closest('table').tBodies[0];
      var rows = Array.prototype.slice.call(tbody.rows);
      var up = th.dataset.order !== 'up';
      th.dataset.order = up ? 'up' : 'down';
      rows.sort(function (a, b) {
        var x = key(a.cells[column]), y = key(b.cells[column]);
        if (x === y) return 0;
        if (x === '' || x === undefined) return 1;
        if (y === '' || y === undefined) return -1;
        return (x < y ? -1 : 1) * (up ? 1 : -1);
      });
      rows.forEach(function (r) { tbody.appendChild(r); });
    });
  });
  document.querySelectorAll('g.legend-entry[data-series]').forEach(function (entry) {
    entry.addEventListener('click', function () {
      var svg = entry.closest('svg');
      var off = !entry.classList.contains('off');
      entry.classList.toggle('off', off);
      svg.querySelectorAll('g.series').forEach(function (g) {
        if (g.dataset.series === entry.dataset.series) g.classList.toggle('off', off);
      });
    });
  });
  window.addEventListener('load', function () {
    document.querySelectorAll('svg.chart').forEach(function (svg) {
      var visible = 0, drawn = 0;
      svg.querySelectorAll('.mark').forEach(function (mark) {
        if (mark.closest('g.series.off')) return;
        visible++;
        var box = mark.getBBox();
        if (box.width > 0 || box.height > 0) drawn++;
      });
      svg.dataset.visible = visible;
      svg.dataset.drawn = drawn;
    });
    // How far each table runs past its box (0: it fits the page's width).
    document.querySelectorAll('div.scroll').forEach(function (box) {
      box.dataset.overflow = Math.max(0, box.scrollWidth - box.clientWidth);
    });
    document.documentElement.dataset.resources = performance.getEntriesByType('resource').length;
    document.documentElement.dataset.ready = '1';
  });
})();
)js";

std::string Now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string Printf(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// How the tables show a value of `column`; the raw value goes into data-v.
std::string Shown(const std::string& column, const std::string& raw) {
  if (raw.empty()) return "";
  char* end = nullptr;
  const double v = std::strtod(raw.c_str(), &end);
  const bool number = end == raw.c_str() + raw.size();
  if (!number) return raw;
  if (column.ends_with("_bytes")) return memory::FormatBytes(std::llround(v));
  if (column == "tokens_per_s") return Printf("%.1f", v);
  if (column == "mfu") return Printf("%.2f %%", v * 100);
  if (column == "final_loss" || column == "final_loss_delta") return Printf("%.4f", v);
  if (column == "estimate_error") return Printf("%+.2f %%", v * 100);
  if (column.ends_with("_ratio")) return Printf("%.3f", v);
  return raw;
}

bool Numeric(const std::string& column) {
  return column.ends_with("_bytes") || column.ends_with("_ratio") || column == "tokens_per_s" ||
         column == "mfu" || column == "final_loss" || column == "final_loss_delta" ||
         column == "estimate_error" || column == "cell" || column == "repeat" ||
         column == "run_id" || column == "rank" || column == "cells" || column == "oom_cells" ||
         column == "snapshot_events";
}

std::string SqlFor(const std::string& sql, int64_t experiment_id) {
  std::string out = sql;
  const std::string id = std::to_string(experiment_id);
  for (size_t at = out.find("?1"); at != std::string::npos; at = out.find("?1", at + id.size())) {
    out.replace(at, 2, id);
  }
  return out;
}

std::string QueryDetails(const char* sql, const ExperimentReport& report, const PageInfo& info) {
  std::string single_line = SqlFor(sql, report.experiment.id);
  for (char& c : single_line) {
    if (c == '\n') c = ' ';
  }
  std::string collapsed;
  for (char c : single_line) {
    if (c == ' ' && !collapsed.empty() && collapsed.back() == ' ') continue;
    collapsed += c;
  }
  return "<details><summary>the query behind this</summary><pre>memsweep query --db " +
         Escape(info.db_path) + " \"" + Escape(collapsed) + "\"</pre></details>\n";
}

// A column's heading: the short name the terminal's fitted tables give it
// (results::kHeaderAbbreviations: peak_allocated_bytes -> peak_alloc), else its name, with a
// line-break opportunity after each '_' and '/', so that a table of many columns fits the
// width of the page instead of running off its right edge. The full name is the <th>'s title
// and data-col.
std::string HeaderLabel(const std::string& column) {
  std::string label = column;
  for (const auto& [name, short_name] : results::kHeaderAbbreviations) {
    if (name == column) label = short_name;
  }
  std::string out;
  for (char c : Escape(label)) {
    out += c;
    if (c == '_' || c == '/') out += "<wbr>";
  }
  return out;
}

// A table of `result`'s columns (all, or those named); each value's cell carries data-v (the
// value as the database holds it) and data-col, and data-run where the row has a run_id.
std::string Table(const QueryResult& result, const std::string& source,
                  const std::vector<std::string>& columns, bool sortable) {
  std::vector<size_t> shown;
  for (const std::string& name : columns) shown.push_back(ColumnIndex(result, name));
  std::optional<size_t> run_column, status_column;
  std::map<std::string, std::string> param_names;  // every row names a key alike
  for (size_t i = 0; i < result.columns.size(); ++i) {
    if (result.columns[i] == "run_id") run_column = i;
    if (result.columns[i] == "status") status_column = i;
    if (result.columns[i] == "params") param_names = ParamNames(result);
  }
  std::ostringstream out;
  out << "<div class=\"scroll\"><table class=\"data" << (sortable ? " sortable" : "")
      << "\" data-source=\"" << source << "\"><thead><tr>";
  for (size_t c : shown) {
    out << "<th data-col=\"" << Escape(result.columns[c]) << "\" title=\""
        << Escape(result.columns[c]) << "\">" << HeaderLabel(result.columns[c]) << "</th>";
  }
  out << "</tr></thead><tbody>\n";
  for (size_t r = 0; r < result.rows.size(); ++r) {
    const auto& row = result.rows[r];
    const std::string status = status_column ? row[*status_column].value_or("") : "";
    out << "<tr" << (status == "oom" || status == "failed" || status == "timeout" ? " class=\"bad\"" : "")
        << ">";
    for (size_t c : shown) {
      const std::string& column = result.columns[c];
      const std::string raw = row[c].value_or("");
      std::string cls = Numeric(column) ? "num" : "";
      if (column == "error" || column == "verdict_reason") cls = "error";
      if (column == "status") cls = "status-" + raw;
      out << "<td" << (cls.empty() ? "" : " class=\"" + cls + "\"") << " data-col=\""
          << Escape(column) << "\"";
      if (run_column) out << " data-run=\"" << Escape(row[*run_column].value_or("")) << "\"";
      if (row[c]) out << " data-v=\"" << Escape(raw) << "\"";
      else out << " data-null=\"1\"";
      out << ">";
      if (column == "error" && raw.size() > 200) {
        // The first line, the rest a click away.
        const size_t cut = std::min(raw.find('\n'), static_cast<size_t>(160));
        out << "<details><summary>" << Escape(raw.substr(0, cut)) << "…</summary>"
            << Escape(raw) << "</details></td>";
        continue;
      }
      // A run that did not finish has no throughput or final loss to show.
      const bool unfinished = !status.empty() && status != "ok" &&
                              (column == "tokens_per_s" || column == "mfu" || column == "final_loss");
      if (column == "params") {
        // One key=value per unbroken span.
        std::string params = Escape(ShortParams(raw, param_names)), spans = "<span class=\"kv\">";
        for (char ch : params) spans += ch == ' ' ? std::string("</span> <span class=\"kv\">") : std::string(1, ch);
        out << spans << "</span></td>";
        continue;
      }
      out << Escape(unfinished ? "" : Shown(column, raw)) << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</tbody></table></div>\n";
  return out.str();
}

std::vector<std::string> Present(const QueryResult& result, std::vector<std::string> wanted) {
  std::vector<std::string> out;
  for (const std::string& name : wanted) {
    for (const std::string& column : result.columns) {
      if (column == name) out.push_back(name);
    }
  }
  return out;
}

std::string Counts(const QueryResult& cells) {
  std::map<std::string, int> by_status;
  for (size_t i = 0; i < cells.rows.size(); ++i) ++by_status[TextAt(cells, i, "status")];
  std::string out = std::to_string(cells.rows.size()) + " runs:";
  for (const auto& [status, n] : by_status) out += " " + std::to_string(n) + " " + status;
  return out;
}

// Runs with the same configuration apart from [device] and the experiment's name, measured on
// the CPU and on CUDA: the same cell on both devices.
std::string DeviceTable(const std::vector<ExperimentReport>& experiments) {
  struct Run {
    const ExperimentReport* report;
    size_t row;
  };
  std::map<std::string, std::vector<Run>> by_config;
  for (const ExperimentReport& report : experiments) {
    std::map<std::string, std::string> config_of;
    for (size_t i = 0; i < report.configs.rows.size(); ++i) {
      config_of[TextAt(report.configs, i, "run_id")] = TextAt(report.configs, i, "config_json");
    }
    for (size_t i = 0; i < report.cells.rows.size(); ++i) {
      if (TextAt(report.cells, i, "status") != "ok") continue;
      nlohmann::json config =
          nlohmann::json::parse(config_of[TextAt(report.cells, i, "run_id")], nullptr, false);
      if (!config.is_object()) continue;
      config.erase("device");
      if (config.contains("experiment") && config["experiment"].is_object()) {
        config["experiment"].erase("name");
      }
      by_config[config.dump()].push_back({&report, i});
    }
  }
  std::ostringstream out;
  size_t pairs = 0;
  for (const auto& [config, runs] : by_config) {
    const Run* cpu = nullptr;
    const Run* cuda = nullptr;
    for (const Run& run : runs) {
      const std::string device = TextAt(run.report->cells, run.row, "device");
      if (device == "cpu" && !cpu) cpu = &run;
      if (device.starts_with("cuda") && !cuda) cuda = &run;
    }
    if (!cpu || !cuda) continue;
    if (pairs++ == 0) {
      out << "<h2 id=\"devices\">The same cells on the CPU and on CUDA</h2>\n"
             "<p class=\"explain\">Runs whose configuration is the same apart from "
             "<code>[device]</code>: the peaks of the same training step measured by the CPU's "
             "tracking allocator and by the CUDA caching allocator.</p>\n"
             "<div class=\"scroll\"><table class=\"data\" data-source=\"devices\"><thead><tr>"
             "<th>cell</th><th>run on the CPU</th><th>run on CUDA</th>"
             "<th>peak allocated, CPU</th><th>peak allocated, CUDA</th><th>ratio</th>"
             "<th>peak reserved, CUDA</th><th>tokens/s, CPU</th><th>tokens/s, CUDA</th>"
             "</tr></thead><tbody>\n";
    }
    auto value = [](const Run* run, const std::string& column) {
      const std::string raw = TextAt(run->report->cells, run->row, column);
      return "<td class=\"num\" data-col=\"" + column + "\" data-run=\"" +
             TextAt(run->report->cells, run->row, "run_id") + "\" data-v=\"" + Escape(raw) +
             "\">" + Escape(Shown(column, raw)) + "</td>";
    };
    const auto a = NumberAt(cpu->report->cells, cpu->row, "peak_allocated_bytes");
    const auto b = NumberAt(cuda->report->cells, cuda->row, "peak_allocated_bytes");
    out << "<tr><td>" << Escape(cpu->report->experiment.name + " " + RunLabel(cpu->report->cells, cpu->row))
        << "</td><td class=\"num\">" << TextAt(cpu->report->cells, cpu->row, "run_id")
        << "</td><td class=\"num\">" << TextAt(cuda->report->cells, cuda->row, "run_id") << "</td>"
        << value(cpu, "peak_allocated_bytes") << value(cuda, "peak_allocated_bytes")
        << "<td class=\"num\">" << (a && b && *a > 0 ? Printf("%.4f", *b / *a) : "") << "</td>"
        << value(cuda, "peak_reserved_bytes") << value(cpu, "tokens_per_s")
        << value(cuda, "tokens_per_s") << "</tr>\n";
  }
  if (pairs > 0) out << "</tbody></table></div>\n";
  return out.str();
}

// Runs whose rows were well short of seq_len (train::ShortRowsWarning), one line each under the
// cells table; "" when none.
std::string ShortRowsNote(const QueryResult& cells) {
  std::string items;
  for (size_t i = 0; i < cells.rows.size(); ++i) {
    const auto mean = NumberAt(cells, i, "row_length_mean");
    const auto longest = NumberAt(cells, i, "row_length_max");
    const auto seq_len = NumberAt(cells, i, "seq_len");
    if (!mean || !longest || !seq_len) continue;
    const std::string warning = train::ShortRowsWarning(
        *mean, static_cast<int64_t>(*longest), static_cast<int64_t>(*seq_len));
    if (warning.empty()) continue;
    items += "<li>" + Escape(RunLabel(cells, i) + " (run " + TextAt(cells, i, "run_id") + "): " +
                             warning) + "</li>\n";
  }
  if (items.empty()) return "";
  return "<p class=\"explain warning\">Short rows — these runs trained rows well short of "
         "<code>seq_len</code> (docs/metrics.md, \"Short rows\"):</p>\n<ul class=\"short-rows\">\n" +
         items + "</ul>\n";
}

bool HasSnapshots(const QueryResult& cells) {
  for (size_t i = 0; i < cells.rows.size(); ++i) {
    if (NumberAt(cells, i, "snapshot_events")) return true;
  }
  return false;
}

void Section(std::ostringstream& out, const ExperimentReport& report, const PageInfo& info) {
  const std::string anchor = "e" + std::to_string(report.experiment.id);
  const ReportCharts charts = BuildCharts(report);
  out << "<section id=\"" << anchor << "\" data-experiment=\"" << report.experiment.id << "\">\n"
      << "<h2>" << Escape(report.experiment.name) << "</h2>\n<p class=\"meta\">experiment "
      << report.experiment.id << ", " << Escape(report.experiment.source_path) << ", created "
      << Escape(report.experiment.created_at) << " — " << Escape(Counts(report.cells)) << "</p>\n";

  if (!charts.ablation.empty()) {
    out << "<h3>The ablation</h3><p class=\"explain\">From the baseline's peak, each step's "
           "own effect — the ratio of the cell with that step alone to the baseline, written "
           "above its bar — applied in the plan's order (memory effects multiply), then what "
           "the steps do together beyond that product, ending at the measured peak of the cell "
           "with all of them. Steps whose cell did not finish are left out.</p>\n"
        << charts.ablation;
  }
  out << "<h3>Cells</h3><p class=\"explain\">Click a heading to sort. Peaks are the "
         "highest bytes allocated (and reserved by the allocator plugin) at any moment of the "
         "run; the estimate is <code>memsweep estimate</code>'s for the same cell, its error "
         "relative to the measurement.</p>\n"
      << Table(report.cells, "cells",
               Present(report.cells, {"cell", "repeat", "run_id", "status", "params", "device",
                                      "peak_allocated_bytes", "peak_reserved_bytes",
                                      "tokens_per_s", "mfu", "final_loss", "verdict",
                                      "estimated_peak_allocated_bytes", "estimate_error",
                                      "snapshot_events", "error"}),
               true)
      << QueryDetails(kCellsSql, report, info);
  out << ShortRowsNote(report.cells);
  if (HasSnapshots(report.cells)) {
    out << "<p class=\"explain\">Runs with <code>snapshot_events</code> kept their allocation "
           "history: <code>memsweep snapshot RUN_ID -o run.pickle</code> writes it for PyTorch's "
           "memory viewer (pytorch.org/memory_viz; docs/snapshot.md).</p>\n";
  }
  if (!charts.breakdown.empty()) {
    out << "<h3>Memory at the peak</h3>" << charts.breakdown
        << QueryDetails(kBreakdownSql, report, info);
  }
  if (!charts.pareto.empty()) out << "<h3>Throughput and memory</h3>" << charts.pareto;
  if (!charts.timeline.empty()) {
    out << "<h3>Memory over the run</h3>" << charts.timeline
        << QueryDetails(kTimelineSql, report, info);
  }
  if (!charts.loss.empty()) {
    out << "<h3>Loss</h3>" << charts.loss << QueryDetails(kLossSql, report, info);
  }
  if (report.comparison) {
    const results::Comparison& c = *report.comparison;
    if (!charts.effects.empty()) {
      out << "<h3>Factor effects</h3>" << charts.effects
          << Table(c.effects, "effects", c.effects.columns, true)
          << "<p class=\"explain\">From <code>memsweep compare --experiment "
          << Escape(report.experiment.name) << "</code>: each value's cells against the "
          << "baseline cell"
          << (c.baseline ? " (cell " + std::to_string(c.baseline->cell_index) + ")" : "")
          << ", averaged.</p>\n";
    }
  } else if (!report.comparison_note.empty()) {
    out << "<p class=\"explain\">No comparison: " << Escape(report.comparison_note) << "</p>\n";
  }
  if (!charts.ranks.empty()) {
    out << "<h3>Ranks</h3>" << charts.ranks
        << Table(report.ranks, "ranks", report.ranks.columns, true)
        << QueryDetails(kRanksSql, report, info);
  }
  out << "</section>\n";
}

}  // namespace

std::string HtmlReport(const std::vector<ExperimentReport>& experiments, const PageInfo& info) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
         "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<title>memsweep report</title>\n<style>"
      << kStyle << "</style></head><body>\n<header><h1>memsweep report</h1><p class=\"meta\">"
      << Escape(info.db_path) << " — generated " << Escape(info.generated.empty() ? Now() : info.generated)
      << " by memsweep " << MEMSWEEP_VERSION
      << " — what every figure means: docs/report.md and docs/metrics.md</p>\n<nav>";
  for (const ExperimentReport& report : experiments) {
    out << "<a href=\"#e" << report.experiment.id << "\">" << Escape(report.experiment.name)
        << "</a>";
  }
  out << "</nav></header>\n";
  for (const ExperimentReport& report : experiments) Section(out, report, info);
  const std::string devices = DeviceTable(experiments);
  if (!devices.empty()) out << "<section>" << devices << "</section>\n";
  out << "<footer><p class=\"meta\">One file: styles, script and charts inline; it fetches "
         "nothing.</p></footer>\n<script>"
      << kScript << "</script>\n</body></html>\n";
  return out.str();
}

void WriteReport(const std::string& html, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code error;
  if (!fs::is_directory(folder, error)) {
    throw ReportWriteError(path + ": the folder " + folder.string() +
                           " does not exist; create it or choose another -o");
  }
  try {
    run_files::WriteFileAtomically(path, html);
  } catch (const std::exception& e) {
    throw ReportWriteError(path + ": cannot be written (" + e.what() +
                           "); nothing was written, choose another -o");
  }
}

}  // namespace memsweep::page
