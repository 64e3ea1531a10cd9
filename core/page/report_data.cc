#include "core/page/report_data.h"

#include <algorithm>
#include <charconv>
#include <system_error>
#include <cstdlib>
#include <stdexcept>

#include "core/results/results_error.h"

namespace memsweep::page {

const char* const kCellsSql =
    "SELECT s.cell_index AS cell, s.repeat, s.run_id, s.status, s.params, m.device,\n"
    "       s.peak_allocated_bytes, s.peak_reserved_bytes, s.tokens_per_s, s.mfu,\n"
    "       s.final_loss, s.verdict, s.estimated_peak_allocated_bytes, s.estimate_error,\n"
    "       s.estimate_status, h.events AS snapshot_events, s.error,\n"
    "       s.row_length_mean, s.row_length_max,\n"
    "       (SELECT json_extract(b.value, '$.params.seq_len')\n"
    "          FROM json_each(m.resolved_config_json, '$.strategies') AS b\n"
    "         WHERE json_extract(b.value, '$.slot') = 'batching') AS seq_len\n"
    "FROM run_summary AS s LEFT JOIN run_metrics AS m ON m.run_id = s.run_id\n"
    "     LEFT JOIN memory_snapshots AS h ON h.run_id = s.run_id\n"
    "WHERE s.experiment_id = ?1 ORDER BY s.cell_index, s.repeat";

const char* const kBreakdownSql =
    "SELECT r.cell_index AS cell, r.repeat, r.id AS run_id, r.status,\n"
    "       m.peak_allocated_bytes, m.peak_reserved_bytes, m.trainable_params_bytes,\n"
    "       m.frozen_params_bytes, m.grads_bytes, m.optimizer_bytes, m.activations_bytes,\n"
    "       m.saved_activations_bytes, m.budget_bytes, m.oom_requested_bytes, m.oom_stage\n"
    "FROM runs AS r JOIN run_metrics AS m ON m.run_id = r.id\n"
    "WHERE r.experiment_id = ?1 ORDER BY r.cell_index, r.repeat";

const char* const kTimelineSql =
    "SELECT t.run_id, r.cell_index AS cell, r.repeat, t.seq, t.step, t.stage, t.seconds,\n"
    "       t.allocated_bytes, t.reserved_bytes, t.peak_bytes\n"
    "FROM memory_timeline AS t JOIN runs AS r ON r.id = t.run_id\n"
    "WHERE r.experiment_id = ?1 ORDER BY r.cell_index, r.repeat, t.seq";

const char* const kLossSql =
    "SELECT l.run_id, r.cell_index AS cell, r.repeat, l.step, l.loss\n"
    "FROM step_metrics AS l JOIN runs AS r ON r.id = l.run_id\n"
    "WHERE r.experiment_id = ?1 AND l.loss IS NOT NULL ORDER BY r.cell_index, r.repeat, l.step";

const char* const kRanksSql =
    "SELECT k.run_id, r.cell_index AS cell, r.repeat, k.rank, k.status,\n"
    "       k.peak_allocated_bytes, k.peak_reserved_bytes, k.params_bytes, k.grads_bytes,\n"
    "       k.optimizer_bytes, k.activations_bytes, k.host_pool_peak_bytes\n"
    "FROM run_ranks AS k JOIN runs AS r ON r.id = k.run_id\n"
    "WHERE r.experiment_id = ?1 ORDER BY r.cell_index, r.repeat, k.rank";

namespace {

bool AllDigits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(),
                                      [](char c) { return c >= '0' && c <= '9'; });
}

std::string KnownExperiments(results::ResultsDb& db) {
  const results::QueryResult names =
      db.Query("SELECT id, name FROM experiments ORDER BY id");
  std::string list;
  for (const auto& row : names.rows) {
    if (!list.empty()) list += ", ";
    list += row[1].value_or("") + " (" + row[0].value_or("") + ")";
  }
  return list.empty() ? "none: run an experiment first (memsweep run FILE)" : list;
}

results::ExperimentRow Find(results::ResultsDb& db, const std::string& name) {
  std::optional<results::ExperimentRow> row;
  int64_t id = 0;
  if (AllDigits(name) && std::from_chars(name.data(), name.data() + name.size(), id).ec == std::errc()) {
    row = db.FindExperiment(id);
  }
  if (!row) row = db.LatestExperiment(name);
  if (!row) {
    throw results::ResultsError(db.path(), "no experiment named or numbered \"" + name +
                                               "\"; the database holds: " + KnownExperiments(db));
  }
  return *row;
}

ExperimentReport Load(results::ResultsDb& db, const results::ExperimentRow& experiment) {
  ExperimentReport report;
  report.experiment = experiment;
  const std::vector<std::string> id = {std::to_string(experiment.id)};
  report.cells = db.Query(kCellsSql, id);
  report.breakdown = db.Query(kBreakdownSql, id);
  report.timeline = db.Query(kTimelineSql, id);
  report.loss = db.Query(kLossSql, id);
  report.ranks = db.Query(kRanksSql, id);
  report.configs = db.Query(
      "SELECT id AS run_id, config_json FROM runs WHERE experiment_id = ?1 ORDER BY id", id);
  try {
    results::CompareOptions options;
    options.experiment_id = experiment.id;
    report.comparison = results::Compare(db, options);
  } catch (const results::ResultsError& e) {
    report.comparison_note = e.what();
  }
  return report;
}

}  // namespace

std::vector<ExperimentReport> LoadReports(results::ResultsDb& db,
                                          const std::vector<std::string>& names) {
  std::vector<results::ExperimentRow> rows;
  if (names.empty()) {
    // The latest experiment of each name, oldest name first.
    const results::QueryResult latest = db.Query(
        "SELECT MAX(id) FROM experiments GROUP BY name ORDER BY MIN(id)");
    for (const auto& row : latest.rows) {
      if (auto found = db.FindExperiment(std::stoll(row[0].value_or("0")))) rows.push_back(*found);
    }
    if (rows.empty()) {
      throw results::ResultsError(db.path(),
                                  "holds no experiment: run one first (memsweep run FILE)");
    }
  } else {
    for (const std::string& name : names) rows.push_back(Find(db, name));
  }
  std::vector<ExperimentReport> reports;
  for (const results::ExperimentRow& row : rows) reports.push_back(Load(db, row));
  return reports;
}

size_t ColumnIndex(const results::QueryResult& result, const std::string& column) {
  for (size_t i = 0; i < result.columns.size(); ++i) {
    if (result.columns[i] == column) return i;
  }
  throw std::out_of_range("report query has no column " + column);
}

std::optional<double> NumberAt(const results::QueryResult& result, size_t row,
                               const std::string& column) {
  const std::optional<std::string>& value = result.rows.at(row)[ColumnIndex(result, column)];
  if (!value || value->empty()) return std::nullopt;
  char* end = nullptr;
  const double parsed = std::strtod(value->c_str(), &end);
  if (end != value->c_str() + value->size()) return std::nullopt;
  return parsed;
}

std::string TextAt(const results::QueryResult& result, size_t row, const std::string& column) {
  return result.rows.at(row)[ColumnIndex(result, column)].value_or("");
}

}  // namespace memsweep::page
