#include "core/results/verification_store.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace memsweep::results {
namespace {

// The run verified against the reference cell `reference_hash` of the same experiment: the
// reference cell's run with the same seed when there is one (repeats pair with repeats), else its
// first repeat (whose different seed makes the verdict n/a, saying so).
std::optional<int64_t> ReferenceRunOf(SqliteConnection& db, int64_t run_id) {
  SqliteStatement find = db.Prepare(
      "SELECT ref.id FROM runs AS r JOIN runs AS ref "
      "ON ref.experiment_id = r.experiment_id AND ref.cell_hash = r.reference_hash "
      "WHERE r.id = ?1");
  find.BindInt64(1, run_id);
  if (!find.Step()) return std::nullopt;
  return find.ColumnInt64(0);
}

// The reference hash names one cell (one repeat); its sibling repeats share its params.
std::optional<int64_t> PartnerWithSeed(SqliteConnection& db, int64_t reference_run,
                                       std::optional<int64_t> seed) {
  if (!seed) return reference_run;
  SqliteStatement find = db.Prepare(
      "SELECT sibling.id FROM runs AS ref JOIN runs AS sibling "
      "ON sibling.experiment_id = ref.experiment_id AND sibling.params_json = ref.params_json "
      "WHERE ref.id = ?1 AND sibling.seed = ?2 ORDER BY sibling.repeat LIMIT 1");
  find.BindInt64(1, reference_run);
  find.BindInt64(2, *seed);
  if (find.Step()) return find.ColumnInt64(0);
  return reference_run;
}

void BindOptionalDouble(SqliteStatement& statement, int index, std::optional<double> value) {
  if (value) {
    statement.BindDouble(index, *value);
  } else {
    statement.BindNull(index);
  }
}

void StoreVerdict(SqliteConnection& db, int64_t run_id, std::optional<int64_t> reference_run,
                  const RunVerdict& verdict) {
  SqliteStatement upsert = db.Prepare(
      "INSERT OR REPLACE INTO verification (run_id, reference_run_id, verdict, expected, reason, "
      "compute_dtype, tolerance_rel, steps_compared, max_abs_deviation, max_rel_deviation, "
      "max_deviation_step, bitwise_equal) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  upsert.BindInt64(1, run_id);
  upsert.BindOptionalInt64(2, reference_run);
  upsert.BindText(3, VerdictName(verdict.verdict));
  upsert.BindTextOrNull(4, verdict.expectation ? ExpectationName(*verdict.expectation) : "");
  upsert.BindText(5, verdict.reason);
  upsert.BindTextOrNull(6, verdict.compute_dtype);
  BindOptionalDouble(upsert, 7, verdict.tolerance);
  const auto& d = verdict.deviation;
  upsert.BindOptionalInt64(8, d ? std::optional<int64_t>(d->steps_compared) : std::nullopt);
  BindOptionalDouble(upsert, 9, d ? std::optional<double>(d->max_abs) : std::nullopt);
  BindOptionalDouble(upsert, 10, d ? std::optional<double>(d->max_rel) : std::nullopt);
  upsert.BindOptionalInt64(11, d ? std::optional<int64_t>(d->step_of_max) : std::nullopt);
  upsert.BindOptionalInt64(12, d ? std::optional<int64_t>(d->bitwise_equal ? 1 : 0)
                                 : std::nullopt);
  upsert.Run();
}

// Recomputes (or deletes, without a reference) the verdict of one run.
void Recompute(SqliteConnection& db, int64_t run_id) {
  std::optional<int64_t> reference_run = ReferenceRunOf(db, run_id);
  if (!reference_run) {
    SqliteStatement has_reference =
        db.Prepare("SELECT reference_hash IS NOT NULL FROM runs WHERE id = ?1");
    has_reference.BindInt64(1, run_id);
    const bool named = has_reference.Step() && has_reference.ColumnInt64(0) != 0;
    has_reference.Reset();
    if (named) {
      RunVerdict verdict;
      verdict.reason = "the reference cell has no row in this experiment";
      StoreVerdict(db, run_id, std::nullopt, verdict);
      return;
    }
    SqliteStatement remove = db.Prepare("DELETE FROM verification WHERE run_id = ?1");
    remove.BindInt64(1, run_id);
    remove.Run();
    return;
  }
  const RunEvidence run = LoadRunEvidence(db, run_id);
  reference_run = PartnerWithSeed(db, *reference_run, run.seed);
  const RunEvidence reference =
      *reference_run == run_id ? run : LoadRunEvidence(db, *reference_run);
  StoreVerdict(db, run_id, reference_run, VerifyRun(reference, run));
}

std::vector<int64_t> Ids(SqliteStatement& select) {
  std::vector<int64_t> ids;
  while (select.Step()) ids.push_back(select.ColumnInt64(0));
  return ids;
}

}  // namespace

RunEvidence LoadRunEvidence(SqliteConnection& db, int64_t run_id) {
  RunEvidence evidence;
  evidence.run_id = run_id;
  SqliteStatement run = db.Prepare(
      "SELECT r.status, r.seed, m.compute_dtype, m.resolved_config_json "
      "FROM runs AS r LEFT JOIN run_metrics AS m ON m.run_id = r.id WHERE r.id = ?1");
  run.BindInt64(1, run_id);
  if (!run.Step()) return evidence;
  evidence.status = ParseRunStatus(run.ColumnText(0)).value_or(RunStatus::kFailed);
  evidence.seed = run.ColumnOptionalInt64(1);
  evidence.compute_dtype = run.ColumnText(2);
  const std::string config = run.ColumnText(3);
  if (!config.empty()) evidence.config = nlohmann::json::parse(config, nullptr, false);
  if (evidence.config.is_discarded()) evidence.config = nullptr;

  SqliteStatement plugins = db.Prepare(
      "SELECT slot, name, math_preserving FROM run_plugins WHERE run_id = ?1 ORDER BY seq");
  plugins.BindInt64(1, run_id);
  while (plugins.Step()) {
    PluginFlag flag{plugins.ColumnText(0), plugins.ColumnText(1), std::nullopt};
    if (const auto value = plugins.ColumnOptionalInt64(2)) flag.math_preserving = *value != 0;
    evidence.plugins.push_back(flag);
  }

  SqliteStatement steps =
      db.Prepare("SELECT step, loss, tokens FROM step_metrics WHERE run_id = ?1 ORDER BY step");
  steps.BindInt64(1, run_id);
  while (steps.Step()) {
    // SQLite stores a NaN as NULL: a step without a loss is a NaN loss.
    const std::optional<double> loss = steps.ColumnOptionalDouble(1);
    evidence.losses.push_back(
        {steps.ColumnInt64(0), loss.value_or(std::numeric_limits<double>::quiet_NaN())});
    evidence.tokens.push_back(steps.ColumnOptionalInt64(2).value_or(-1));
  }
  return evidence;
}

void UpdateRunVerification(SqliteConnection& db, int64_t run_id) {
  Recompute(db, run_id);
  SqliteStatement dependents = db.Prepare(
      "SELECT other.id FROM runs AS r JOIN runs AS ref "
      "ON ref.experiment_id = r.experiment_id AND ref.params_json = r.params_json "
      "JOIN runs AS other ON other.experiment_id = r.experiment_id "
      "AND other.reference_hash = ref.cell_hash "
      "WHERE r.id = ?1 AND other.id != ?1");
  dependents.BindInt64(1, run_id);
  for (int64_t other : Ids(dependents)) Recompute(db, other);
}

void UpdateExperimentVerification(SqliteConnection& db, int64_t experiment_id) {
  SqliteStatement runs = db.Prepare("SELECT id FROM runs WHERE experiment_id = ?1");
  runs.BindInt64(1, experiment_id);
  for (int64_t run_id : Ids(runs)) Recompute(db, run_id);
}

}  // namespace memsweep::results
