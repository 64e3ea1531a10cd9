// The HTML report against the database it shows: every number in its tables equals what
// `memsweep query` (or `memsweep compare`) returns, each chart draws one mark per figure, and
// the page needs nothing but itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "core/memory/byte_size.h"
#include "core/page/html_report.h"
#include "core/page/report_data.h"
#include "core/results/compare.h"
#include "support/html_tables.h"
#include "support/report_db.h"
#include "support/results_db_fixtures.h"

namespace {

using memsweep::page::ColumnIndex;
using memsweep::page::HtmlReport;
using memsweep::page::LoadReports;
using memsweep::results::ResultsDb;
using namespace memsweep::testing_support;

std::string Report(ResultsDb& db, const std::vector<std::string>& names = {}) {
  return HtmlReport(LoadReports(db, names), {.db_path = db.path(), .generated = "then"});
}

int64_t ExperimentId(ResultsDb& db, const std::string& name) {
  return std::stoll(QueryValue(db, "SELECT id FROM experiments WHERE name = '" + name + "'").value());
}

std::string Printf(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// What the database says for one cell of the page, by the table it is in.
std::optional<std::string> FromDatabase(ResultsDb& db, const std::string& source,
                                        const std::vector<HtmlCell>& row, const HtmlCell& cell) {
  const std::string column = cell.attributes.at("data-col");
  const std::string run = cell.attributes.at("data-run");
  if (source == "ranks") {
    std::string rank;
    for (const HtmlCell& c : row) {
      if (c.attributes.at("data-col") == "rank") rank = c.attributes.at("data-v");
    }
    if (column == "cell" || column == "repeat") {
      return QueryValue(db, "SELECT " + std::string(column == "cell" ? "cell_index" : "repeat") +
                                " FROM runs WHERE id = " + run);
    }
    return QueryValue(db, "SELECT " + column + " FROM run_ranks WHERE run_id = " + run +
                              " AND rank = " + rank);
  }
  if (column == "cell" && source == "ranks") {
    return QueryValue(db, "SELECT cell_index FROM runs WHERE id = " + run);
  }
  if (column == "device") {
    return QueryValue(db, "SELECT device FROM run_metrics WHERE run_id = " + run);
  }
  if (column == "snapshot_events") {
    return QueryValue(db, "SELECT events FROM memory_snapshots WHERE run_id = " + run);
  }
  if (column == "cell") {
    return QueryValue(db, "SELECT cell_index FROM run_summary WHERE run_id = " + run);
  }
  return QueryValue(db, "SELECT " + column + " FROM run_summary WHERE run_id = " + run);
}

TEST(HtmlReportTest, EveryNumberInItsTablesIsTheDatabasesOwn) {
  const std::string path = FreshDbPath();
  BuildReportDb(path);
  ResultsDb db(path, ResultsDb::Mode::kReadOnly);
  const std::string html = Report(db);
  size_t checked = 0, bytes_shown = 0;
  for (const HtmlTable& table : ReadTables(html)) {
    if (table.source == "effects") continue;  // below, against compare
    for (const auto& row : table.rows) {
      for (const HtmlCell& cell : row) {
        if (!cell.attributes.contains("data-run") || !cell.attributes.contains("data-col")) continue;
        const std::optional<std::string> expected = FromDatabase(db, table.source, row, cell);
        const std::string column = cell.attributes.at("data-col");
        if (cell.attributes.contains("data-null")) {
          EXPECT_FALSE(expected.has_value()) << table.source << " " << column;
          EXPECT_EQ(cell.text, "");
          continue;
        }
        ASSERT_TRUE(expected.has_value()) << table.source << " " << column;
        EXPECT_EQ(cell.attributes.at("data-v"), *expected) << table.source << " " << column;
        ++checked;
        // And the text shows that value.
        if (column.ends_with("_bytes")) {
          EXPECT_EQ(cell.text, memsweep::memory::FormatBytes(std::stoll(*expected))) << column;
          ++bytes_shown;
        } else if (column == "tokens_per_s" && !cell.text.empty()) {
          EXPECT_EQ(cell.text, Printf("%.1f", std::stod(*expected)));
        } else if (column == "final_loss" && !cell.text.empty()) {
          EXPECT_EQ(cell.text, Printf("%.4f", std::stod(*expected)));
        } else if (column == "status" || column == "run_id" || column == "error") {
          EXPECT_NE(cell.text.find(expected->substr(0, 40)), std::string::npos) << cell.text;
        }
      }
    }
  }
  EXPECT_GE(checked, 80u);
  EXPECT_NE(html.find("data-col=\"snapshot_events\" data-run=\"1\" data-v=\"4175\""),
            std::string::npos);
  EXPECT_NE(html.find("memsweep snapshot RUN_ID -o run.pickle"), std::string::npos);
  EXPECT_GE(bytes_shown, 25u);

  // The factor effects are compare's.
  memsweep::results::CompareOptions options;
  options.experiment_id = ExperimentId(db, "study");
  const memsweep::results::QueryResult effects = memsweep::results::Compare(db, options).effects;
  size_t effect_values = 0;
  const size_t section = html.find("<section id=\"e" + std::to_string(*options.experiment_id) + "\"");
  ASSERT_NE(section, std::string::npos);
  const std::string study = html.substr(section, html.find("</section>", section) - section);
  for (const HtmlTable& table : ReadTables(study)) {
    if (table.source != "effects" || table.rows.size() != effects.rows.size()) continue;
    for (size_t r = 0; r < effects.rows.size(); ++r) {
      for (size_t c = 0; c < effects.columns.size(); ++c) {
        const HtmlCell& cell = table.rows[r][c];
        EXPECT_EQ(cell.attributes.at("data-col"), effects.columns[c]);
        if (effects.rows[r][c]) {
          EXPECT_EQ(cell.attributes.at("data-v"), *effects.rows[r][c]);
          ++effect_values;
        }
      }
    }
  }
  EXPECT_GE(effect_values, 4 * effects.columns.size() - 8);
}

TEST(HtmlReportTest, UnfinishedRunsShowTheirErrorAndNoThroughput) {
  const std::string path = FreshDbPath();
  BuildReportDb(path);
  ResultsDb db(path, ResultsDb::Mode::kReadOnly);
  const std::string html = Report(db, {"study"});
  EXPECT_NE(html.find("Tried to allocate 4.00 MiB &lt;&amp;&gt; (stage: forward)"), std::string::npos);
  EXPECT_EQ(html.find("<&>"), std::string::npos);
  EXPECT_NE(html.find("worker crashed (signal 11)"), std::string::npos);
  for (const HtmlTable& table : ReadTables(html)) {
    if (table.source != "cells") continue;
    for (const auto& row : table.rows) {
      std::string status;
      for (const HtmlCell& cell : row) {
        if (cell.attributes.at("data-col") == "status") status = cell.text;
        if (status != "ok" && cell.attributes.at("data-col") == "tokens_per_s") {
          EXPECT_EQ(cell.text, "");
        }
      }
    }
  }
}

TEST(HtmlReportTest, EachChartDrawsAMarkPerFigure) {
  const std::string path = FreshDbPath();
  BuildReportDb(path);
  ResultsDb db(path, ResultsDb::Mode::kReadOnly);
  const std::string html = Report(db);
  const std::string study = "e" + std::to_string(ExperimentId(db, "study"));

  // Breakdown: a segment per positive part of each run's peak, a bar per reserved peak.
  const auto parts = db.Query(
      "SELECT trainable_params_bytes, frozen_params_bytes, grads_bytes, optimizer_bytes,"
      " activations_bytes, saved_activations_bytes, peak_reserved_bytes FROM run_metrics AS m"
      " JOIN runs AS r ON r.id = m.run_id JOIN experiments AS e ON e.id = r.experiment_id"
      " WHERE e.name = 'study'");
  size_t segments = 0;
  for (const auto& row : parts.rows) {
    auto v = [&](size_t i) { return row[i] ? std::stod(*row[i]) : 0.0; };
    const double saved = std::min(v(4), v(5));
    for (double part : {v(0), v(1), v(2), v(3), saved, v(4) - saved, v(6)}) segments += part > 0;
  }
  ASSERT_GT(segments, 10u);
  EXPECT_EQ(Count(SvgById(html, study + "-breakdown"), "class=\"mark"), segments);

  // Throughput against memory: the 3 ok runs as points, the oom run as a cross at its budget.
  const std::string pareto = SvgById(html, study + "-pareto");
  EXPECT_EQ(Count(pareto, "<circle class=\"mark"), 3u);
  EXPECT_EQ(Count(pareto, "class=\"mark oom\""), 1u);
  EXPECT_NE(pareto.find("cell 2: 256.00 MiB, out of memory"), std::string::npos);

  // Lines: one per run with a timeline, one per run with losses.
  const int64_t with_timeline = QueryCount(
      db, "SELECT COUNT(DISTINCT t.run_id) FROM memory_timeline AS t JOIN runs AS r ON "
          "r.id = t.run_id JOIN experiments AS e ON e.id = r.experiment_id WHERE e.name = 'study'");
  const int64_t with_loss = QueryCount(
      db, "SELECT COUNT(DISTINCT l.run_id) FROM step_metrics AS l JOIN runs AS r ON "
          "r.id = l.run_id JOIN experiments AS e ON e.id = r.experiment_id WHERE e.name = 'study'"
          " AND l.loss IS NOT NULL");
  ASSERT_EQ(with_timeline, 3);
  EXPECT_EQ(Count(SvgById(html, study + "-timeline"), "<polyline class=\"mark\""),
            static_cast<size_t>(with_timeline));
  EXPECT_EQ(Count(SvgById(html, study + "-loss"), "<polyline class=\"mark\""),
            static_cast<size_t>(with_loss));
  // Each run's peak is marked; the oom run's line ends at its peak, where it failed.
  const std::string timeline = SvgById(html, study + "-timeline");
  EXPECT_EQ(Count(timeline, "<circle class=\"peak\""), 3u);
  EXPECT_NE(timeline.find("cell 2: OOM at 250.00 MiB, forward"), std::string::npos);

  // Ranks: 4 parts and a reserved bar per rank.
  EXPECT_EQ(Count(SvgById(html, study + "-ranks"), "class=\"mark"), 10u);
  // Effects: a bar per ratio compare gives (the oom cell's value has no throughput).
  memsweep::results::CompareOptions options;
  options.experiment_id = ExperimentId(db, "study");
  const auto effects = memsweep::results::Compare(db, options).effects;
  size_t ratios = 0;
  for (const auto& row : effects.rows) {
    ratios += row[ColumnIndex(effects, "peak_allocated_ratio")].has_value() +
              row[ColumnIndex(effects, "tokens_per_s_ratio")].has_value();
  }
  ASSERT_GE(ratios, 6u);
  EXPECT_EQ(Count(SvgById(html, study + "-effects"), "class=\"mark"), ratios);
  // No ablation in this experiment.
  EXPECT_EQ(SvgById(html, study + "-ablation"), "");
}

TEST(HtmlReportTest, TheAblationWaterfallLeadsFromTheBaselineToAll) {
  const std::string path = FreshDbPath();
  BuildReportDb(path);
  ResultsDb db(path, ResultsDb::Mode::kReadOnly);
  const std::string html = Report(db, {"steps"});
  const std::string waterfall =
      SvgById(html, "e" + std::to_string(ExperimentId(db, "steps")) + "-ablation");
  ASSERT_NE(waterfall, "");
  // baseline 1000 B; +half 0.5x; +quarter 0.25x -> 125 B; all 100 B: together 0.8x.
  EXPECT_EQ(Count(waterfall, "class=\"mark\""), 5u);
  EXPECT_NE(waterfall.find("+half: −500 B (0.5x)"), std::string::npos);
  EXPECT_NE(waterfall.find("+quarter: −375 B (0.25x)"), std::string::npos);
  EXPECT_NE(waterfall.find("together: −25 B (0.8x)"), std::string::npos);
  EXPECT_NE(waterfall.find("all: 100 B"), std::string::npos);
}

TEST(HtmlReportTest, TheSameCellOnBothDevicesStandsSideBySide) {
  const std::string path = FreshDbPath();
  BuildReportDb(path);
  ResultsDb db(path, ResultsDb::Mode::kReadOnly);
  const std::string cpu_run =
      QueryValue(db, "SELECT id FROM runs WHERE cell_hash = 's0'").value();
  const std::string gpu_run =
      QueryValue(db, "SELECT id FROM runs WHERE cell_hash = 'g0'").value();
  size_t pairs = 0;
  for (const HtmlTable& table : ReadTables(Report(db))) {
    if (table.source != "devices") continue;
    ASSERT_EQ(table.rows.size(), 1u);  // s1 differs in more than [device]
    EXPECT_EQ(table.rows[0][1].text, cpu_run);
    EXPECT_EQ(table.rows[0][2].text, gpu_run);
    EXPECT_EQ(table.rows[0][5].text, "1.0000");  // the same peak on both
    ++pairs;
  }
  EXPECT_EQ(pairs, 1u);
  // Without the CUDA experiment there is nothing to pair.
  EXPECT_EQ(Report(db, {"study"}).find("data-source=\"devices\""), std::string::npos);
}

TEST(HtmlReportTest, ThePageNeedsNothingButItself) {
  const std::string path = FreshDbPath();
  BuildReportDb(path);
  ResultsDb db(path, ResultsDb::Mode::kReadOnly);
  const std::string html = Report(db);
  EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  for (const char* fetches : {" src=", "<link", "@import", "href=\"http", "fetch(",
                              "XMLHttpRequest"}) {
    EXPECT_EQ(html.find(fetches), std::string::npos) << fetches;
  }
  // url() only for the page's own patterns.
  EXPECT_GT(Count(html, "url(#"), 0u);
  EXPECT_EQ(Count(html, "url("), Count(html, "url(#"));
  // The only URL is SVG's namespace name, which is never fetched.
  EXPECT_EQ(Count(html, "http:") + Count(html, "https:"),
            Count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
}

// Two slots whose plugins vary: the cells table and the factor chart name each by its slot, as
// the terminal's tables do (loss=full, adapter=lora), never "plugin=" twice.
TEST(HtmlReportTest, VariedPluginsOfTwoSlotsAreNamedByTheirSlots) {
  const std::string path = FreshDbPath();
  int64_t experiment = 0;
  {
    ResultsDb db(path, ResultsDb::Mode::kReadWrite);
    experiment = db.EnsureExperiment("slots", "slots.toml", "[experiment]\n");
    int64_t index = 0;
    for (const char* loss : {"full", "chunked"}) {
      for (const char* adapter : {"none", "lora"}) {
        const std::string params = std::string(R"({"strategies.adapter.plugin":")") + adapter +
                                   R"(","strategies.loss.plugin":")" + loss + "\"}";
        const int64_t run = db.ClaimRun(
            experiment, ReportCell("c" + std::to_string(index), index, params, "{}"), 1);
        const nlohmann::json result = ReportRun("cpu", index + 1, 1000.0 * (index + 1));
        db.FinishRun(run, memsweep::results::RunStatus::kOk, "", &result);
        ++index;
      }
    }
  }
  ResultsDb db(path, ResultsDb::Mode::kReadOnly);
  const std::string html = Report(db, {"slots"});
  EXPECT_EQ(html.find("plugin="), std::string::npos);
  std::vector<std::string> params;
  for (const HtmlTable& table : ReadTables(html)) {
    if (table.source != "cells") continue;
    for (const auto& row : table.rows) {
      for (const HtmlCell& cell : row) {
        if (cell.attributes.at("data-col") == "params") params.push_back(cell.text);
      }
    }
  }
  EXPECT_EQ(params, (std::vector<std::string>{"adapter=none loss=full", "adapter=lora loss=full",
                                              "adapter=none loss=chunked",
                                              "adapter=lora loss=chunked"}));
  const std::string effects = SvgById(html, "e" + std::to_string(experiment) + "-effects");
  ASSERT_NE(effects, "");
  for (const char* label : {">loss=full<", ">loss=chunked<", ">adapter=none<", ">adapter=lora<"}) {
    EXPECT_NE(effects.find(label), std::string::npos) << label << " missing from\n" << effects;
  }
}

// A table of many columns fits the page's width instead of running off its right edge: headings
// are the terminal's short names (kHeaderAbbreviations) that break after each '_', the full name
// in their title; the page is as wide as the window allows (the browser test measures it).
TEST(HtmlReportTest, TableHeadingsAreShortAndBreakable) {
  const std::string path = FreshDbPath();
  BuildReportDb(path);
  ResultsDb db(path, ResultsDb::Mode::kReadOnly);
  const std::string html = Report(db, {"study"});
  EXPECT_NE(html.find("<th data-col=\"estimated_peak_allocated_bytes\" "
                      "title=\"estimated_peak_allocated_bytes\">est_<wbr>peak_<wbr>alloc</th>"),
            std::string::npos);
  EXPECT_NE(html.find("<th data-col=\"tokens_per_s\" title=\"tokens_per_s\">tok/<wbr>s</th>"),
            std::string::npos);
  EXPECT_NE(html.find("<th data-col=\"snapshot_events\" title=\"snapshot_events\">"
                      "snapshot_<wbr>events</th>"),
            std::string::npos);
  EXPECT_EQ(html.find("<th>estimated_peak_allocated_bytes</th>"), std::string::npos);
  EXPECT_NE(html.find("header, section, footer { max-width: 1480px;"), std::string::npos);
}

TEST(HtmlReportTest, UnknownExperimentIsNamedWithTheKnownOnes) {
  const std::string path = FreshDbPath();
  BuildReportDb(path);
  ResultsDb db(path, ResultsDb::Mode::kReadOnly);
  try {
    LoadReports(db, {"nope"});
    FAIL() << "no error";
  } catch (const memsweep::results::ResultsError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no experiment named or numbered \"nope\""), std::string::npos) << what;
    EXPECT_NE(what.find("study (1), steps (2), study-gpu (3)"), std::string::npos) << what;
  }
  EXPECT_THROW(LoadReports(db, {"99999999999999999999999"}), memsweep::results::ResultsError);
  // By id: that experiment alone.
  const auto one = LoadReports(db, {std::to_string(ExperimentId(db, "steps"))});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].experiment.name, "steps");
  EXPECT_EQ(LoadReports(db, {}).size(), 3u);
}

}  // namespace
