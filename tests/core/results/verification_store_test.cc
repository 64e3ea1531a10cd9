// The verification table as the sweep keeps it: verdicts written when a run finishes, those of
// the runs verified against a reference recomputed when the reference is claimed again and
// finishes (reruns, resumed sweeps), removed when the experiment no longer names a reference;
// and schema version 1 files, which open, migrate and keep their runs (verdict n/a).
#include "core/results/verification_store.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/results/compare.h"
#include "core/results/results_db.h"
#include "core/results/schema.h"
#include "support/results_db_fixtures.h"

namespace memsweep::results {
namespace {

using nlohmann::json;
using testing_support::FreshDbPath;
using testing_support::MakeCell;
using testing_support::QueryValue;

// A run result with what verification reads: config, compute dtype, plugin flags, steps.
json VerifiableResult(const std::vector<double>& losses, const std::string& checkpointing,
                      double lr = 0.003) {
  json steps = json::array();
  for (size_t i = 0; i < losses.size(); ++i) {
    steps.push_back({{"step", i}, {"loss", losses[i]}, {"tokens", 128}});
  }
  const json strategies = {
      {{"slot", "precision"}, {"plugin", "fp32"}, {"version", "1.0.0"}, {"params", json::object()}},
      {{"slot", "checkpointing"}, {"plugin", checkpointing}, {"version", "1.0.0"},
       {"params", json::object()}}};
  return {{"status", "ok"},
          {"compute_dtype", "float32"},
          {"config",
           {{"experiment", {{"steps", losses.size()}, {"seed", 7}}},
            {"optimizer", {{"lr", lr}}},
            {"strategies", strategies}}},
          {"plugins",
           {{{"slot", "precision"}, {"name", "fp32"}, {"math_preserving", true}},
            {{"slot", "checkpointing"}, {"name", checkpointing}, {"math_preserving", true}}}},
          {"summary", {{"final_loss", losses.back()}}},
          {"steps", steps}};
}

CellInfo Cell(const std::string& hash, int64_t index, const std::string& params,
              std::optional<std::string> reference = "ref") {
  CellInfo cell = MakeCell(hash, index, 0, params);
  cell.seed = 7;
  cell.reference_hash = reference;
  return cell;
}

std::string VerdictOf(ResultsDb& db, int64_t run_id) {
  return QueryValue(db, "SELECT verdict || ' | ' || reason FROM verification WHERE run_id = " +
                            std::to_string(run_id))
      .value_or("(no row)");
}

const std::vector<double> kLosses = {6.0, 5.5, 5.25};

class VerificationStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = FreshDbPath();
    db_ = std::make_unique<ResultsDb>(path_, ResultsDb::Mode::kReadWrite);
    experiment_ = db_->EnsureExperiment("verify", "verify.toml", "[matrix]\n");
    cells_ = {Cell("ref", 0, R"({"c":"none"})"), Cell("full", 1, R"({"c":"full"})"),
              Cell("lr", 2, R"({"c":"none","lr":0.001})")};
    ids_ = db_->AddPendingRuns(experiment_, cells_);
  }

  void Finish(size_t cell, const json& result) {
    db_->ClaimRun(experiment_, cells_[cell], 1);
    db_->FinishRun(ids_[cell], RunStatus::kOk, "", &result);
  }

  std::string path_;
  std::unique_ptr<ResultsDb> db_;
  int64_t experiment_ = 0;
  std::vector<CellInfo> cells_;
  std::vector<int64_t> ids_;
};

TEST_F(VerificationStoreTest, PendingRunsHaveNotApplicableVerdicts) {
  EXPECT_EQ(VerdictOf(*db_, ids_[0]), "reference | the reference run");
  EXPECT_EQ(VerdictOf(*db_, ids_[1]), "n/a | reference status pending");
}

TEST_F(VerificationStoreTest, VerdictsFollowTheReferenceThroughReruns) {
  Finish(1, VerifiableResult(kLosses, "full"));  // before its reference: no verdict yet
  EXPECT_EQ(VerdictOf(*db_, ids_[1]), "n/a | reference status pending");
  Finish(0, VerifiableResult(kLosses, "none"));  // the reference: its dependents are updated
  EXPECT_EQ(VerdictOf(*db_, ids_[1]), "pass | checkpointing: none -> full");
  EXPECT_EQ(QueryValue(*db_, "SELECT bitwise_equal || ' ' || max_abs_deviation || ' ' || "
                             "steps_compared FROM verification WHERE run_id = " +
                                 std::to_string(ids_[1])),
            "1 0.0 3");
  Finish(2, VerifiableResult(kLosses, "none", 0.001));
  EXPECT_EQ(VerdictOf(*db_, ids_[2]),
            "differs | not a strategy change: optimizer.lr: 0.003 -> 0.001");

  // Rerunning the reference: while it runs nothing is verified against it ...
  const int64_t again = db_->ClaimRun(experiment_, cells_[0], 1);
  EXPECT_EQ(again, ids_[0]);
  EXPECT_EQ(VerdictOf(*db_, ids_[1]), "n/a | reference status running");
  // ... and its new losses decide.
  const json drifted = VerifiableResult({6.0, 5.5, 5.3}, "none");
  db_->FinishRun(ids_[0], RunStatus::kOk, "", &drifted);
  EXPECT_EQ(VerdictOf(*db_, ids_[1]), "fail | checkpointing: none -> full");
  EXPECT_EQ(QueryValue(*db_, "SELECT max_deviation_step FROM verification WHERE run_id = " +
                                 std::to_string(ids_[1])),
            "2");

  // The run_summary view carries the verdict too.
  EXPECT_EQ(QueryValue(*db_, "SELECT verdict FROM run_summary WHERE run_id = " +
                                 std::to_string(ids_[1])),
            "fail");
}

TEST_F(VerificationStoreTest, AFailedReferenceMakesEveryVerdictNotApplicable) {
  Finish(1, VerifiableResult(kLosses, "full"));
  db_->ClaimRun(experiment_, cells_[0], 1);
  db_->FinishRun(ids_[0], RunStatus::kFailed, "crashed", nullptr);
  EXPECT_EQ(VerdictOf(*db_, ids_[1]), "n/a | reference status failed");
}

TEST_F(VerificationStoreTest, APlanWithoutReferenceRemovesTheVerdicts) {
  Finish(0, VerifiableResult(kLosses, "none"));
  Finish(1, VerifiableResult(kLosses, "full"));
  for (CellInfo& cell : cells_) cell.reference_hash.reset();
  db_->AddPendingRuns(experiment_, cells_);
  EXPECT_EQ(QueryValue(*db_, "SELECT count(*) FROM verification"), "0");
}

TEST_F(VerificationStoreTest, CompareShowsTheStoredVerdicts) {
  Finish(0, VerifiableResult(kLosses, "none"));
  Finish(1, VerifiableResult(kLosses, "full"));
  Finish(2, VerifiableResult(kLosses, "none", 0.001));
  ResultsDb reader(path_, ResultsDb::Mode::kReadOnly);
  CompareOptions options;
  options.baseline = "c=full";  // the verdicts stay against the reference
  const Comparison comparison = Compare(reader, options);
  EXPECT_TRUE(comparison.verified_against_reference);
  EXPECT_EQ(comparison.reference_cell, 0);
  const std::string csv = FormatComparison(comparison, OutputFormat::kCsv);
  EXPECT_NE(csv.find("verdict,expected,compute_dtype,max_abs_deviation,max_rel_deviation,"
                     "max_deviation_step,tolerance_rel,verdict_reason"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find("reference,,float32"), std::string::npos) << csv;
  EXPECT_NE(csv.find("pass,equivalent,float32,0.0,0.0,0,1e-05,checkpointing: none -> full"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find("differs,config differs,float32"), std::string::npos) << csv;
}

TEST_F(VerificationStoreTest, CompareTakesTheReferenceCellAsItsDefaultBaseline) {
  // The reference is cell 1 ("full"), not the lowest cell.
  for (CellInfo& cell : cells_) cell.reference_hash = "full";
  db_->AddPendingRuns(experiment_, cells_);
  Finish(0, VerifiableResult(kLosses, "none"));
  Finish(1, VerifiableResult(kLosses, "full"));
  Finish(2, VerifiableResult(kLosses, "none", 0.001));
  ResultsDb reader(path_, ResultsDb::Mode::kReadOnly);
  const Comparison comparison = Compare(reader, CompareOptions{});
  ASSERT_TRUE(comparison.baseline.has_value());
  EXPECT_EQ(comparison.baseline->cell_index, 1);
  EXPECT_EQ(comparison.baseline_choice, BaselineChoice::kReference);
  EXPECT_EQ(comparison.named_reference_cell, 1);
  EXPECT_EQ(comparison.reference_cell, 1);
  const std::string table = FormatComparison(comparison, OutputFormat::kTable);
  EXPECT_NE(table.find("baseline: cell 1 (c=full, lr=null), 1 ok run: the experiment's "
                       "[experiment] reference\nloss verification: against the experiment's "
                       "reference, cell 1\n"),
            std::string::npos)
      << table;
  const json out = json::parse(FormatComparison(comparison, OutputFormat::kJson));
  EXPECT_EQ(out["baseline"]["cell"], 1);
  EXPECT_EQ(out["baseline"]["chosen_by"], "reference");

  // --baseline still wins; the verdicts stay against the reference.
  CompareOptions named;
  named.baseline = std::to_string(ids_[0]);  // a run id of cell 0
  const Comparison by_option = Compare(reader, named);
  EXPECT_EQ(by_option.baseline->cell_index, 0);
  EXPECT_EQ(by_option.baseline_choice, BaselineChoice::kOption);
  EXPECT_EQ(by_option.reference_cell, 1);
}

TEST_F(VerificationStoreTest, AReferenceWithoutAnOkRunLeavesTheLowestOkCellAsBaseline) {
  for (CellInfo& cell : cells_) cell.reference_hash = "full";
  db_->AddPendingRuns(experiment_, cells_);
  Finish(0, VerifiableResult(kLosses, "none"));
  db_->ClaimRun(experiment_, cells_[1], 1);
  db_->FinishRun(ids_[1], RunStatus::kOom, "out of memory", nullptr);
  ResultsDb reader(path_, ResultsDb::Mode::kReadOnly);
  const Comparison comparison = Compare(reader, CompareOptions{});
  EXPECT_EQ(comparison.baseline->cell_index, 0);
  EXPECT_EQ(comparison.baseline_choice, BaselineChoice::kFirstOk);
  const std::string table = FormatComparison(comparison, OutputFormat::kTable);
  EXPECT_NE(table.find("1 ok run: the lowest cell with an ok run (the [experiment] reference, "
                       "cell 1, has none)"),
            std::string::npos)
      << table;
}

TEST_F(VerificationStoreTest, CompareWithoutReferenceVerifiesAgainstTheBaseline) {
  for (CellInfo& cell : cells_) cell.reference_hash.reset();
  db_->AddPendingRuns(experiment_, cells_);
  Finish(0, VerifiableResult(kLosses, "none"));
  Finish(1, VerifiableResult({6.0, 5.5, 5.5}, "full"));
  Finish(2, VerifiableResult(kLosses, "none", 0.001));
  ResultsDb reader(path_, ResultsDb::Mode::kReadOnly);
  const Comparison comparison = Compare(reader, CompareOptions{});
  EXPECT_FALSE(comparison.verified_against_reference);
  EXPECT_EQ(comparison.reference_cell, 0);
  const json out = json::parse(FormatComparison(comparison, OutputFormat::kJson));
  EXPECT_EQ(out["verification"]["against"], "baseline");
  EXPECT_EQ(out["cells"][0]["verdict"], "reference");
  EXPECT_EQ(out["cells"][1]["verdict"], "fail");
  EXPECT_EQ(out["cells"][1]["max_deviation_step"], 2);
  EXPECT_EQ(out["cells"][2]["verdict"], "differs");
  EXPECT_EQ(out["cells"][2]["expected"], "config differs");
  const std::string table = FormatComparison(comparison, OutputFormat::kTable);
  EXPECT_NE(table.find("loss verification: against the baseline, cell 0"), std::string::npos)
      << table;
}

TEST(VerificationMigrationTest, AVersion1FileOpensAndKeepsItsRuns) {
  const std::string path = FreshDbPath();
  {
    SqliteConnection v1(path, SqliteConnection::Access::kReadWriteCreate);
    MigrateSchema(v1, {SchemaMigrations().front()});
    v1.Execute(
        "INSERT INTO experiments (id, name, source_path, file_text) VALUES (1, 'old', 'o', '');"
        "INSERT INTO runs (id, experiment_id, cell_hash, cell_index, status, seed, params_json) "
        "VALUES (1, 1, 'a', 0, 'ok', 7, '{\"a\":1}'), (2, 1, 'b', 1, 'ok', 7, '{\"a\":2}');"
        "INSERT INTO run_plugins (run_id, seq, slot, name, version) "
        "VALUES (1, 0, 'checkpointing', 'none', '1.0.0');"
        "INSERT INTO step_metrics (run_id, step, loss, tokens) VALUES (1, 0, 5.0, 128);"
        "INSERT INTO run_metrics (run_id, final_loss) VALUES (1, 5.0), (2, 5.0);");
    ASSERT_EQ(v1.IntegerPragma("user_version"), 1);
  }
  {
    ResultsDb migrating_writer(path, ResultsDb::Mode::kReadWrite);
  }
  ResultsDb db(path, ResultsDb::Mode::kReadOnly);
  EXPECT_EQ(QueryValue(db, "PRAGMA user_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(QueryValue(db, "SELECT name FROM run_plugins WHERE run_id = 1"), "none");
  EXPECT_EQ(QueryValue(db, "SELECT math_preserving IS NULL FROM run_plugins WHERE run_id = 1"),
            "1");
  EXPECT_EQ(QueryValue(db, "SELECT final_loss FROM run_summary WHERE run_id = 1"), "5.0");
  const RunVerdict verdict = VerifyRun(db.LoadEvidence(2), db.LoadEvidence(1));
  EXPECT_EQ(verdict.verdict, Verdict::kNotApplicable);
  EXPECT_NE(verdict.reason.find("older memsweep"), std::string::npos) << verdict.reason;
  // compare still works on it, with n/a verdicts.
  const Comparison comparison = Compare(db, CompareOptions{});
  EXPECT_EQ(comparison.cells.rows.size(), 2u);
}

}  // namespace
}  // namespace memsweep::results
