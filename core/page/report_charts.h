// The charts of one experiment's section of the HTML report, built from its ExperimentReport
// (report_data.h): what each chart shows is described in docs/report.md.
//
//   ReportCharts charts = BuildCharts(report);
//   page << charts.breakdown;  // SVG text
#pragma once

#include <map>
#include <string>

#include "core/page/report_data.h"

namespace memsweep::page {

// SVG text of each chart; "" where the experiment has nothing to draw (no multi-rank cell, no
// ablation, a single cell for the effects).
struct ReportCharts {
  std::string breakdown;   // memory at the peak per run, stacked; reserved beside; budgets
  std::string timeline;    // each stage's peak over the steps, several runs overlaid
  std::string pareto;      // tokens/s against peak allocated; the front; OOM cells at the budget
  std::string loss;        // loss per step; the reference thicker; verdicts in the legend
  std::string effects;     // each factor's effect on peak and tokens/s (ratios to the baseline)
  std::string ranks;       // per-rank peaks of multi-rank runs, stacked by kind
  std::string ablation;    // the peak from the baseline through each ablation step, a waterfall
};

ReportCharts BuildCharts(const ExperimentReport& report);

// "cell 3", or "cell 3 r1" for a repeat: how every chart names a run.
std::string RunLabel(const results::QueryResult& result, size_t row);

// The short name of every params key of `cells` (its "params" column): each key's shortest
// ending no other key's ending equals, a slot's plugin key named by its slot — as the terminal's
// tables name them (experiment::ShortParamNames): strategies.loss.plugin -> loss.
std::map<std::string, std::string> ParamNames(const results::QueryResult& cells);

// params JSON ({"k": v}) as "k=v k=v": each key by its name in `names` (ParamNames of the whole
// table, so that every row names it alike), else by its short name among the row's own keys;
// values as experiment::ParamText writes them.
std::string ShortParams(const std::string& params_json,
                        const std::map<std::string, std::string>& names = {});

}  // namespace memsweep::page
