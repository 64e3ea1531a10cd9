#include "core/page/report_charts.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/experiment/cell.h"
#include "core/page/svg_chart.h"

namespace memsweep::page {
namespace {

using results::QueryResult;

// The steps the timeline shows at least (more when a run's peak falls later).
constexpr int64_t kTimelineSteps = 4;

// The memory kinds' colours, in both memory charts: grey values 0.13, 0.62 (striped), 0.5,
// 0.33, 0.86 and 0.74 (striped), so that they stay apart printed in greyscale.
const std::string kTrainable = "#08306b", kFrozen = "#6baed6", kGradients = "#31a354",
                  kOptimizer = "#a63603", kSaved = "#fdd0a2", kOther = "#bdbdbd";

std::string Id(const ExperimentReport& report, const std::string& chart) {
  return "e" + std::to_string(report.experiment.id) + "-" + chart;
}

double Or0(std::optional<double> v) { return v.value_or(0.0); }

std::string BreakdownChart(const ExperimentReport& report) {
  const QueryResult& b = report.breakdown;
  if (b.rows.empty()) return "";
  BarChart chart{.id = Id(report, "breakdown"),
                 .title = "Memory at the peak, by kind (allocated; reserved beside it)",
                 .value_label = "Bytes at the peak",
                 .value_unit = Unit::kBytes};
  std::vector<BarSeries> series = {
      {"trainable parameters", {}, kTrainable},
      {"frozen parameters", {}, kFrozen, true},
      {"gradients", {}, kGradients},
      {"optimizer state", {}, kOptimizer},
      {"activations saved for backward", {}, kSaved},
      {"other (temporaries, workspaces)", {}, kOther, true}};
  BarSeries reserved{"reserved (allocator)", {}};
  std::set<double> budgets;
  for (size_t i = 0; i < b.rows.size(); ++i) {
    chart.categories.push_back(RunLabel(b, i));
    chart.notes.push_back(TextAt(b, i, "status") == "ok" ? "" : TextAt(b, i, "status"));
    const double activations = Or0(NumberAt(b, i, "activations_bytes"));
    const double saved = std::min(activations, Or0(NumberAt(b, i, "saved_activations_bytes")));
    series[0].values.push_back(NumberAt(b, i, "trainable_params_bytes"));
    series[1].values.push_back(NumberAt(b, i, "frozen_params_bytes"));
    series[2].values.push_back(NumberAt(b, i, "grads_bytes"));
    series[3].values.push_back(NumberAt(b, i, "optimizer_bytes"));
    series[4].values.push_back(saved);
    series[5].values.push_back(activations - saved);
    reserved.values.push_back(NumberAt(b, i, "peak_reserved_bytes"));
    if (double budget = Or0(NumberAt(b, i, "budget_bytes")); budget > 0) budgets.insert(budget);
  }
  chart.series = std::move(series);
  chart.beside = std::move(reserved);
  for (double budget : budgets) chart.lines.emplace_back("budget", budget);
  return DrawStackedBars(chart);
}

std::string TimelineChart(const ExperimentReport& report) {
  const QueryResult& t = report.timeline;
  if (t.rows.empty()) return "";
  LineChart chart{.id = Id(report, "timeline"),
                  .title = "Memory over the run: the peak within each stage (legend: each "
                           "run's peak, stage and step)",
                  .x_label = "training step (set-up before 0)",
                  .y_label = "Peak allocated within the stage",
                  .x_unit = Unit::kNumber,
                  .y_unit = Unit::kBytes,
                  .hidden_by_default_after_four = true};
  // The set-up and the first steps, and the step of each run's peak: a comb of 30 steps hides
  // more than it shows. Stages of one step are spread evenly over [step, step + 1).
  int64_t last_step = kTimelineSteps - 1;
  {
    std::map<std::string, std::pair<double, int64_t>> peak_of;  // run -> (peak, its step)
    for (size_t i = 0; i < t.rows.size(); ++i) {
      auto& [peak, step] = peak_of[TextAt(t, i, "run_id")];
      const double y = Or0(NumberAt(t, i, "peak_bytes"));
      if (y > peak) {
        peak = y;
        step = std::llround(Or0(NumberAt(t, i, "step")));
      }
    }
    for (const auto& [run, peak] : peak_of) last_step = std::max(last_step, peak.second);
  }
  int64_t steps_in_db = 0;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    steps_in_db = std::max<int64_t>(steps_in_db, std::llround(Or0(NumberAt(t, i, "step"))) + 1);
  }
  if (steps_in_db > last_step + 1) {
    chart.title = "Memory over the first " + std::to_string(last_step + 1) + " of " +
                  std::to_string(steps_in_db) + " steps: the peak within each stage";
  }
  std::map<std::string, std::pair<double, std::string>> oom_of;  // run -> (peak, stage)
  for (size_t i = 0; i < report.breakdown.rows.size(); ++i) {
    if (TextAt(report.breakdown, i, "status") != "oom") continue;
    oom_of[TextAt(report.breakdown, i, "run_id")] = {
        Or0(NumberAt(report.breakdown, i, "peak_allocated_bytes")),
        TextAt(report.breakdown, i, "oom_stage")};
  }
  size_t begin = 0;
  while (begin < t.rows.size()) {
    size_t end = begin;
    const std::string run = TextAt(t, begin, "run_id");
    while (end < t.rows.size() && TextAt(t, end, "run_id") == run) ++end;
    LineSeries series{.name = RunLabel(t, begin), .group = "run" + run};
    std::map<int64_t, int> per_step, seen;
    for (size_t i = begin; i < end; ++i) ++per_step[std::llround(Or0(NumberAt(t, i, "step")))];
    double best = -1;
    for (size_t i = begin; i < end; ++i) {
      const int64_t step = std::llround(Or0(NumberAt(t, i, "step")));
      if (step > last_step) continue;
      const double x = static_cast<double>(step) +
                       static_cast<double>(seen[step]++) / std::max(per_step[step], 1);
      const double y = Or0(NumberAt(t, i, "peak_bytes"));
      series.points.push_back({x, y});
      if (y > best) {
        best = y;
        series.marker = Point{x, y};
        series.marker_label = FormatValue(y, Unit::kBytes) + ", " + TextAt(t, i, "stage") +
                              (step >= 0 ? " " + std::to_string(step) : "");
      }
    }
    // A run that ran out of memory stopped inside a stage that never ended: its last point is
    // the run's peak, where it failed.
    if (const auto failed = oom_of.find(run); failed != oom_of.end() && failed->second.first > best &&
                                             !series.points.empty()) {
      const Point last{series.points.back().x + 0.25, failed->second.first};
      series.points.push_back(last);
      series.marker = last;
      series.marker_label = "OOM at " + FormatValue(last.y, Unit::kBytes) +
                            (failed->second.second.empty() ? "" : ", " + failed->second.second);
    }
    chart.series.push_back(std::move(series));
    begin = end;
  }
  return DrawLines(chart);
}

std::string ParetoChart(const ExperimentReport& report) {
  const QueryResult& c = report.cells;
  const QueryResult& b = report.breakdown;
  std::map<std::string, double> budget_of;
  for (size_t i = 0; i < b.rows.size(); ++i) {
    budget_of[TextAt(b, i, "run_id")] = Or0(NumberAt(b, i, "budget_bytes"));
  }
  Scatter chart{.id = Id(report, "pareto"),
                .title = "Throughput against peak memory",
                .x_label = "Peak allocated",
                .y_label = "Tokens/s",
                .x_unit = Unit::kBytes,
                .y_unit = Unit::kNumber};
  bool any_oom_without_budget = false;
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const std::string status = TextAt(c, i, "status");
    const auto peak = NumberAt(c, i, "peak_allocated_bytes");
    const auto speed = NumberAt(c, i, "tokens_per_s");
    if (status == "ok" && peak && speed) {
      chart.points.push_back({.label = RunLabel(c, i), .x = *peak, .y = *speed});
    } else if (status == "oom") {
      const double budget = budget_of[TextAt(c, i, "run_id")];
      if (budget <= 0) any_oom_without_budget = true;
      chart.points.push_back(
          {.label = RunLabel(c, i), .x = budget > 0 ? budget : Or0(peak), .y = 0, .failed = true});
    }
  }
  if (chart.points.empty()) return "";
  // The front: no other ok point has less or equal memory and more speed.
  for (ScatterPoint& p : chart.points) {
    if (p.failed) continue;
    p.on_front = std::none_of(chart.points.begin(), chart.points.end(), [&](const ScatterPoint& q) {
      return !q.failed && &q != &p && q.x <= p.x && q.y >= p.y && (q.x < p.x || q.y > p.y);
    });
  }
  chart.note = std::string("out-of-memory cells stand at their budget with no throughput") +
               (any_oom_without_budget ? " (without a budget: at their peak when they stopped)"
                                       : "");
  return DrawScatter(chart);
}

std::string LossChart(const ExperimentReport& report) {
  const QueryResult& l = report.loss;
  if (l.rows.empty()) return "";
  std::map<std::string, std::string> verdict_of;
  for (size_t i = 0; i < report.cells.rows.size(); ++i) {
    verdict_of[TextAt(report.cells, i, "run_id")] = TextAt(report.cells, i, "verdict");
  }
  LineChart chart{.id = Id(report, "loss"),
                  .title = "Loss per optimizer step (the reference thicker; verdicts in the legend)",
                  .x_label = "optimizer step",
                  .y_label = "Loss",
                  .hidden_by_default_after_four = false};
  size_t begin = 0;
  while (begin < l.rows.size()) {
    size_t end = begin;
    const std::string run = TextAt(l, begin, "run_id");
    while (end < l.rows.size() && TextAt(l, end, "run_id") == run) ++end;
    const std::string verdict = verdict_of[run];
    LineSeries series{.name = RunLabel(l, begin) + (verdict.empty() ? "" : " — " + verdict),
                      .emphasised = verdict == "reference",
                      .group = "run" + run};
    for (size_t i = begin; i < end; ++i) {
      series.points.push_back({Or0(NumberAt(l, i, "step")), Or0(NumberAt(l, i, "loss"))});
    }
    chart.series.push_back(std::move(series));
    begin = end;
  }
  // The reference first, so that it is drawn in the first colour and listed first.
  std::stable_partition(chart.series.begin(), chart.series.end(),
                        [](const LineSeries& s) { return s.emphasised; });
  chart.hidden_by_default_after_four = chart.series.size() > 8;
  return DrawLines(chart);
}

std::string EffectsChart(const ExperimentReport& report) {
  if (!report.comparison || report.comparison->effects.rows.empty()) return "";
  const QueryResult& e = report.comparison->effects;
  BarChart chart{.id = Id(report, "effects"),
                 .title = "Each factor's effect, relative to the baseline cell (mean over its "
                          "cells)",
                 .value_label = "Ratio to the baseline",
                 .value_unit = Unit::kRatio};
  BarSeries peak{"peak allocated", {}}, speed{"tokens/s", {}};
  // Each factor by its shortest unambiguous ending, as the terminal's tables name it: two slots'
  // plugins are "loss=full" and "adapter=lora", never "plugin=" twice.
  std::vector<std::string> factors;
  for (size_t i = 0; i < e.rows.size(); ++i) factors.push_back(TextAt(e, i, "factor"));
  const std::map<std::string, std::string> names = experiment::ShortParamNames(factors);
  for (size_t i = 0; i < e.rows.size(); ++i) {
    chart.categories.push_back(names.at(TextAt(e, i, "factor")) + "=" + TextAt(e, i, "value"));
    peak.values.push_back(NumberAt(e, i, "peak_allocated_ratio"));
    speed.values.push_back(NumberAt(e, i, "tokens_per_s_ratio"));
  }
  chart.series = {peak, speed};
  return DrawGroupedBars(chart);
}

std::string RanksChart(const ExperimentReport& report) {
  const QueryResult& r = report.ranks;
  if (r.rows.empty()) return "";
  BarChart chart{.id = Id(report, "ranks"),
                 .title = "Peak memory per rank of multi-rank cells",
                 .value_label = "Bytes at the rank's peak",
                 .value_unit = Unit::kBytes};
  // The colours of the same kinds in the breakdown chart.
  std::vector<BarSeries> series = {{"parameters", {}, kTrainable},
                                   {"gradients", {}, kGradients},
                                   {"optimizer state", {}, kOptimizer},
                                   {"activations, other", {}, kSaved}};
  BarSeries reserved{"reserved (allocator)", {}};
  for (size_t i = 0; i < r.rows.size(); ++i) {
    chart.categories.push_back(RunLabel(r, i) + " rank " + TextAt(r, i, "rank"));
    series[0].values.push_back(NumberAt(r, i, "params_bytes"));
    series[1].values.push_back(NumberAt(r, i, "grads_bytes"));
    series[2].values.push_back(NumberAt(r, i, "optimizer_bytes"));
    series[3].values.push_back(NumberAt(r, i, "activations_bytes"));
    reserved.values.push_back(NumberAt(r, i, "peak_reserved_bytes"));
  }
  chart.series = std::move(series);
  chart.beside = std::move(reserved);
  return DrawStackedBars(chart);
}

// Seed 000's story as a waterfall: the baseline's peak, then each step's own effect (the cell with
// that step alone, as a ratio to the baseline) applied in the plan's order — memory effects
// multiply (a quarter of the batch, half the sequence) — then what the steps do together beyond
// that product, ending at the cell with all of them: the bars lead to the measured peak exactly.
std::string AblationChart(const ExperimentReport& report) {
  const QueryResult& c = report.cells;
  std::map<std::string, double> peak;
  std::vector<std::string> steps;
  for (size_t i = 0; i < c.rows.size(); ++i) {
    if (TextAt(c, i, "repeat") != "0") continue;
    const nlohmann::json params = nlohmann::json::parse(TextAt(c, i, "params"), nullptr, false);
    if (!params.is_object() || !params.contains("ablation") || !params["ablation"].is_string()) {
      continue;
    }
    const std::string name = params["ablation"].get<std::string>();
    const auto value = NumberAt(c, i, "peak_allocated_bytes");
    if (TextAt(c, i, "status") != "ok" || !value) continue;
    peak[name] = *value;
    if (name.starts_with("+")) steps.push_back(name);
  }
  if (!peak.contains("baseline") || !peak.contains("all") || steps.empty() ||
      peak["baseline"] <= 0) {
    return "";
  }
  Waterfall chart{.id = Id(report, "ablation"),
                  .title = "The peak from the baseline through each step's own effect, then "
                           "all together",
                  .value_label = "Peak allocated",
                  .value_unit = Unit::kBytes,
                  .start_label = "baseline",
                  .end_label = "all",
                  .start = peak["baseline"],
                  .end = peak["all"]};
  double running = peak["baseline"];
  for (const std::string& step : steps) {
    const double ratio = peak[step] / peak["baseline"];
    chart.steps.push_back({step, running * ratio - running, FormatValue(ratio, Unit::kRatio)});
    running *= ratio;
  }
  chart.steps.push_back({"together", peak["all"] - running,
                         FormatValue(peak["all"] / running, Unit::kRatio)});
  return DrawWaterfall(chart);
}

}  // namespace

std::string RunLabel(const QueryResult& result, size_t row) {
  const std::string repeat = TextAt(result, row, "repeat");
  return "cell " + TextAt(result, row, "cell") + (repeat.empty() || repeat == "0" ? "" : " r" + repeat);
}

std::map<std::string, std::string> ParamNames(const QueryResult& cells) {
  std::vector<std::string> keys;
  const size_t column = ColumnIndex(cells, "params");
  for (const auto& row : cells.rows) {
    const nlohmann::json params = nlohmann::json::parse(row[column].value_or(""), nullptr, false);
    if (!params.is_object()) continue;
    for (const auto& [key, value] : params.items()) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    }
  }
  return experiment::ShortParamNames(keys);
}

std::string ShortParams(const std::string& params_json,
                        const std::map<std::string, std::string>& names) {
  const nlohmann::json params = nlohmann::json::parse(params_json, nullptr, false);
  if (!params.is_object()) return params_json;
  std::vector<std::string> keys;
  for (const auto& [key, value] : params.items()) keys.push_back(key);
  const std::map<std::string, std::string> own = experiment::ShortParamNames(keys);
  std::string out;
  for (const auto& [key, value] : params.items()) {
    const auto named = names.find(key);
    if (!out.empty()) out += " ";
    out += (named != names.end() ? named->second : own.at(key)) + "=" +
           experiment::ParamText(value);
  }
  return out;
}

ReportCharts BuildCharts(const ExperimentReport& report) {
  return {.breakdown = BreakdownChart(report),
          .timeline = TimelineChart(report),
          .pareto = ParetoChart(report),
          .loss = LossChart(report),
          .effects = EffectsChart(report),
          .ranks = RanksChart(report),
          .ablation = AblationChart(report)};
}

}  // namespace memsweep::page
