#include "core/results/cell_verdicts.h"

#include <algorithm>
#include <cstdlib>

namespace memsweep::results {
namespace {

// Higher is more severe: a cell shows the verdict of its most severe run.
int Severity(Verdict verdict) {
  switch (verdict) {
    case Verdict::kNotApplicable: return 0;
    case Verdict::kReference: return 1;
    case Verdict::kPass: return 2;
    case Verdict::kClose: return 3;
    case Verdict::kDiffers: return 4;
    case Verdict::kFail: return 5;
  }
  return 0;
}

std::optional<double> Number(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  return std::strtod(text->c_str(), nullptr);
}

std::optional<int64_t> Integer(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  return std::stoll(*text);
}

// run id -> stored verdict, for the runs of the experiment that have one.
std::map<int64_t, RunVerdict> StoredVerdicts(ResultsDb& db, int64_t experiment_id) {
  const QueryResult rows = db.Query(
      "SELECT v.run_id, v.verdict, v.expected, v.reason, v.compute_dtype, v.tolerance_rel, "
      "v.steps_compared, v.max_abs_deviation, v.max_rel_deviation, v.max_deviation_step, "
      "v.bitwise_equal FROM verification AS v JOIN runs AS r ON r.id = v.run_id "
      "WHERE r.experiment_id = ?1",
      {std::to_string(experiment_id)});
  std::map<int64_t, RunVerdict> verdicts;
  for (const auto& row : rows.rows) {
    RunVerdict verdict;
    verdict.verdict = ParseVerdict(row[1].value_or("")).value_or(Verdict::kNotApplicable);
    if (row[2]) verdict.expectation = ParseExpectation(*row[2]);
    verdict.reason = row[3].value_or("");
    verdict.compute_dtype = row[4].value_or("");
    verdict.tolerance = Number(row[5]);
    if (row[6]) {
      TrajectoryDeviation deviation;
      deviation.steps_compared = *Integer(row[6]);
      deviation.max_abs = Number(row[7]).value_or(0.0);
      deviation.max_rel = Number(row[8]).value_or(0.0);
      deviation.step_of_max = Integer(row[9]).value_or(-1);
      deviation.bitwise_equal = row[10] == std::optional<std::string>("1");
      verdict.deviation = deviation;
    }
    verdicts.emplace(std::stoll(row[0].value_or("0")), verdict);
  }
  return verdicts;
}

// Verdicts of every run of `cells` against the baseline cell's run with the same seed.
std::map<int64_t, RunVerdict> VerdictsAgainst(ResultsDb& db, const std::vector<CellFigures>& cells,
                                              const CellFigures& baseline) {
  std::vector<RunEvidence> references;
  for (int64_t id : baseline.run_ids) references.push_back(db.LoadEvidence(id));
  std::map<int64_t, RunVerdict> verdicts;
  for (const CellFigures& cell : cells) {
    for (int64_t id : cell.run_ids) {
      const RunEvidence run = db.LoadEvidence(id);
      const RunEvidence* reference = &references.front();
      for (const RunEvidence& candidate : references) {
        if (candidate.seed == run.seed) reference = &candidate;
      }
      verdicts.emplace(id, VerifyRun(*reference, run));
    }
  }
  return verdicts;
}

CellVerdict Combine(const CellFigures& cell, const std::map<int64_t, RunVerdict>& verdicts) {
  CellVerdict combined;
  bool first = true;
  for (int64_t id : cell.run_ids) {
    const auto it = verdicts.find(id);
    if (it == verdicts.end()) continue;
    const RunVerdict& verdict = it->second;
    if (first || Severity(verdict.verdict) > Severity(combined.verdict.verdict)) {
      combined.verdict = verdict;
    }
    first = false;
    if (!verdict.deviation) continue;
    const TrajectoryDeviation& d = *verdict.deviation;
    combined.max_abs_deviation = std::max(combined.max_abs_deviation.value_or(d.max_abs), d.max_abs);
    if (!combined.max_rel_deviation || d.max_rel > *combined.max_rel_deviation) {
      combined.max_rel_deviation = d.max_rel;
      combined.max_deviation_step = d.step_of_max;
    }
  }
  if (first) combined.verdict.reason = "no verdict recorded";
  return combined;
}

}  // namespace

CellVerdicts VerifyCells(ResultsDb& db, int64_t experiment_id,
                         const std::vector<CellFigures>& cells, const CellFigures& baseline) {
  CellVerdicts result;
  std::map<int64_t, RunVerdict> verdicts = StoredVerdicts(db, experiment_id);
  result.from_reference = !verdicts.empty();
  if (verdicts.empty()) {
    verdicts = VerdictsAgainst(db, cells, baseline);
    result.reference_cell = baseline.cell_index;
  }
  for (const CellFigures& cell : cells) {
    CellVerdict combined = Combine(cell, verdicts);
    if (result.from_reference && combined.verdict.verdict == Verdict::kReference) {
      result.reference_cell = cell.cell_index;
    }
    result.by_cell.emplace(cell.cell_index, std::move(combined));
  }
  return result;
}

}  // namespace memsweep::results
