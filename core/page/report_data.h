// What the HTML report (memsweep report) shows of one experiment, read from the results database
// with the SQL below — the same statements a user can give `memsweep query`, which the page
// prints beside each section, so every number on it can be checked.
//
//   ResultsDb db("results/memsweep.db", ResultsDb::Mode::kReadOnly);
//   std::vector<ExperimentReport> experiments = LoadReports(db, {"quickstart"});
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/results/compare.h"
#include "core/results/query_result.h"
#include "core/results/results_db.h"

namespace memsweep::page {

// ?1 is the experiment id in each. One row per run, by cell then repeat.
extern const char* const kCellsSql;      // the cells table (status, peaks, speed, loss, estimate)
extern const char* const kBreakdownSql;  // the memory breakdown at the peak, budget, reserved
extern const char* const kTimelineSql;   // memory_timeline rows of every run
extern const char* const kLossSql;       // step_metrics' loss of every run
extern const char* const kRanksSql;      // run_ranks of multi-rank runs

struct ExperimentReport {
  results::ExperimentRow experiment;
  results::QueryResult cells, breakdown, timeline, loss, ranks;
  results::QueryResult configs;  // run_id, config_json: the same cell on both devices
  // compare's cells and factor effects; nullopt with the reason when compare cannot run (no ok
  // or oom run yet).
  std::optional<results::Comparison> comparison;
  std::string comparison_note;
};

// The experiments named (a name: its latest experiment of that name; digits: an experiment id),
// or every experiment of the database (the latest of each name) when `names` is empty. Throws
// ResultsError naming the experiment when one does not exist, listing the ones that do.
std::vector<ExperimentReport> LoadReports(results::ResultsDb& db,
                                          const std::vector<std::string>& names);

// The index of a column of `result`; throws std::out_of_range naming it when absent.
size_t ColumnIndex(const results::QueryResult& result, const std::string& column);
// A row's value as a number; nullopt for NULL or text that is not one.
std::optional<double> NumberAt(const results::QueryResult& result, size_t row,
                               const std::string& column);
std::string TextAt(const results::QueryResult& result, size_t row, const std::string& column);

}  // namespace memsweep::page
