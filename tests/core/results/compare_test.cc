// compare on a hand-built ablation with known figures (support/ablation_db.h): ratios against
// the baseline cell, repeats averaged, main effects, baseline selection and its errors.
#include "core/results/compare.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/results/main_effects.h"
#include "support/ablation_db.h"
#include "support/results_db_fixtures.h"

namespace memsweep::results {
namespace {

using testing_support::BuildAblationDb;
using testing_support::FreshDbPath;

// The value of `column` in row `row`.
std::optional<std::string> At(const QueryResult& table, size_t row, const std::string& column) {
  for (size_t c = 0; c < table.columns.size(); ++c) {
    if (table.columns[c] == column) return table.rows.at(row).at(c);
  }
  ADD_FAILURE() << "no column " << column;
  return std::nullopt;
}

double Number(const QueryResult& table, size_t row, const std::string& column) {
  const std::optional<std::string> text = At(table, row, column);
  if (!text) {
    ADD_FAILURE() << column << " of row " << row << " is NULL";
    return 0.0;
  }
  return std::strtod(text->c_str(), nullptr);
}

class CompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = FreshDbPath();
    ablation_ = BuildAblationDb(path_);
  }

  Comparison RunCompare(const std::string& baseline, const std::string& experiment = "") {
    ResultsDb db(path_, ResultsDb::Mode::kReadOnly);
    CompareOptions options;
    options.experiment = experiment;
    options.baseline = baseline;
    return Compare(db, options);
  }

  std::string CompareError(const std::string& baseline, const std::string& experiment = "") {
    try {
      RunCompare(baseline, experiment);
    } catch (const ResultsError& e) {
      return e.what();
    }
    return "(no error)";
  }

  std::string path_;
  testing_support::AblationDb ablation_;
};

TEST_F(CompareTest, CellsAgainstTheDefaultBaseline) {
  const Comparison c = RunCompare("");
  EXPECT_EQ(c.experiment.name, "ablation");  // the most recently created experiment
  EXPECT_EQ(c.factors, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.baseline->cell_index, 0);
  EXPECT_EQ(c.compared_runs, 5);
  EXPECT_EQ(c.other_runs, 1);
  EXPECT_EQ(c.cells.columns,
            (std::vector<std::string>{"cell", "a", "b", "n", "status", "peak_allocated_bytes",
                                      "peak_allocated_ratio", "peak_reserved_ratio", "estimate",
                                      "estimated_peak_allocated_bytes", "estimate_error",
                                      "activations_bytes", "activations_ratio", "tokens_per_s",
                                      "tokens_per_s_ratio", "final_loss", "final_loss_delta",
                                      "verdict", "expected", "compute_dtype", "max_abs_deviation",
                                      "max_rel_deviation", "max_deviation_step", "tolerance_rel",
                                      "verdict_reason"}));
  const QueryResult& t = c.cells;
  ASSERT_EQ(t.rows.size(), 4u);  // the failed cell 4 is left out

  // Cell 0: two repeats averaged (tokens/s 100 and 300, loss 3.0 and 2.0).
  EXPECT_EQ(At(t, 0, "n"), "2");
  EXPECT_EQ(At(t, 0, "status"), "ok");
  EXPECT_EQ(At(t, 0, "peak_allocated_bytes"), "1000");
  EXPECT_EQ(Number(t, 0, "tokens_per_s"), 200.0);
  EXPECT_EQ(Number(t, 0, "final_loss"), 2.5);
  EXPECT_EQ(Number(t, 0, "peak_allocated_ratio"), 1.0);
  EXPECT_EQ(Number(t, 0, "final_loss_delta"), 0.0);

  EXPECT_EQ(At(t, 1, "a"), "2");
  EXPECT_EQ(At(t, 1, "b"), "x");
  EXPECT_EQ(t.kinds[1][1], ValueKind::kInteger);
  EXPECT_EQ(Number(t, 1, "peak_allocated_ratio"), 0.5);
  EXPECT_EQ(Number(t, 1, "peak_reserved_ratio"), 0.5);
  EXPECT_EQ(At(t, 1, "activations_bytes"), "250");  // the fixture's peak allocated / 2
  EXPECT_EQ(Number(t, 1, "activations_ratio"), 0.5);
  EXPECT_EQ(Number(t, 1, "tokens_per_s_ratio"), 2.0);
  EXPECT_EQ(Number(t, 1, "final_loss_delta"), 0.25);

  EXPECT_EQ(Number(t, 2, "peak_allocated_ratio"), 1.5);
  EXPECT_EQ(Number(t, 2, "tokens_per_s_ratio"), 0.5);
  EXPECT_EQ(Number(t, 2, "final_loss_delta"), -0.25);

  // Cell 3 ran out of memory: peaks (how far it got) but no throughput or loss.
  EXPECT_EQ(At(t, 3, "status"), "oom");
  EXPECT_EQ(Number(t, 3, "peak_allocated_ratio"), 4.0);
  EXPECT_EQ(Number(t, 3, "peak_reserved_ratio"), 4096.0 / 2000.0);
  EXPECT_EQ(At(t, 3, "tokens_per_s"), std::nullopt);
  EXPECT_EQ(At(t, 3, "tokens_per_s_ratio"), std::nullopt);
  EXPECT_EQ(At(t, 3, "final_loss_delta"), std::nullopt);
}

TEST_F(CompareTest, MainEffectsOfEachFactor) {
  const QueryResult e = RunCompare("").effects;
  ASSERT_EQ(e.rows.size(), 4u);
  // a = 1 (the baseline's value): cells 0 and 2.
  EXPECT_EQ(At(e, 0, "factor"), "a");
  EXPECT_EQ(At(e, 0, "value"), "1");
  EXPECT_EQ(At(e, 0, "cells"), "2");
  EXPECT_EQ(Number(e, 0, "tokens_per_s_ratio"), 1.0);
  EXPECT_EQ(Number(e, 0, "final_loss_delta"), 0.0);
  // a = 2: cell 1 (cell 3 is oom-only: counted, not averaged) against cells 0 and 2.
  EXPECT_EQ(At(e, 1, "value"), "2");
  EXPECT_EQ(At(e, 1, "cells"), "1");
  EXPECT_EQ(At(e, 1, "oom_cells"), "1");
  EXPECT_EQ(Number(e, 1, "peak_allocated_ratio"), 500.0 / ((1000.0 + 1500.0) / 2));
  EXPECT_EQ(Number(e, 1, "peak_reserved_ratio"), 1000.0 / ((2000.0 + 3000.0) / 2));
  EXPECT_EQ(Number(e, 1, "tokens_per_s_ratio"), 400.0 / ((200.0 + 100.0) / 2));
  EXPECT_EQ(Number(e, 1, "final_loss_delta"), 2.75 - (2.5 + 2.25) / 2);
  // b = "x" (baseline) and b = "y": cell 2 against cells 0 and 1.
  EXPECT_EQ(At(e, 2, "factor"), "b");
  EXPECT_EQ(At(e, 2, "value"), "x");
  EXPECT_EQ(Number(e, 2, "peak_allocated_ratio"), 1.0);
  EXPECT_EQ(At(e, 3, "value"), "y");
  EXPECT_EQ(Number(e, 3, "peak_allocated_ratio"), 1500.0 / ((1000.0 + 500.0) / 2));
  EXPECT_EQ(Number(e, 3, "tokens_per_s_ratio"), 100.0 / ((200.0 + 400.0) / 2));
  EXPECT_EQ(Number(e, 3, "final_loss_delta"), 2.25 - (2.5 + 2.75) / 2);
}

TEST_F(CompareTest, BaselineByParamsOrRunId) {
  const Comparison by_params = RunCompare("a=2, b=x");
  EXPECT_EQ(by_params.baseline->cell_index, 1);
  EXPECT_EQ(Number(by_params.cells, 0, "peak_allocated_ratio"), 2.0);
  EXPECT_EQ(Number(by_params.cells, 0, "tokens_per_s_ratio"), 0.5);
  EXPECT_EQ(Number(by_params.cells, 1, "tokens_per_s_ratio"), 1.0);
  // Effects are relative to the new baseline's values: a = 1 against a = 2.
  EXPECT_EQ(Number(by_params.effects, 0, "tokens_per_s_ratio"), 150.0 / 400.0);

  const Comparison by_run = RunCompare(std::to_string(ablation_.run_of_cell2));
  EXPECT_EQ(by_run.baseline->cell_index, 2);
  EXPECT_EQ(Number(by_run.cells, 2, "final_loss_delta"), 0.0);
  EXPECT_EQ(Number(by_run.cells, 0, "peak_allocated_ratio"), 1000.0 / 1500.0);

  EXPECT_EQ(RunCompare("b=\"y\",a=1.0").baseline->cell_index, 2);  // quoted, numerically equal
}

TEST_F(CompareTest, BaselineErrorsSayWhatIsWrong) {
  EXPECT_NE(CompareError("b=x").find("2 cells have b=x (cells 0, 1); give more keys"),
            std::string::npos);
  EXPECT_NE(CompareError("a=2,b=y").find("baseline cell 3 has no ok run (status oom)"),
            std::string::npos);
  EXPECT_NE(CompareError("c=1").find("no cell has a parameter 'c'"), std::string::npos);
  EXPECT_NE(CompareError("a=7").find("no cell has a=7"), std::string::npos);
  EXPECT_NE(CompareError("999").find("run 999 is not an ok or oom run"), std::string::npos);
  EXPECT_NE(CompareError("fast").find("expected a run id or key=value pairs"), std::string::npos);
  EXPECT_NE(CompareError("", "nope")
                .find("no experiment named 'nope' (experiments: ablation, "
                      "older)"),
            std::string::npos);
  EXPECT_NE(CompareError("", "older").find("'older' has no run with status ok or oom yet"),
            std::string::npos);
}

// An experiment whose every cell ran out of memory (what a model too big for the card gives) is
// still compared: each cell with its status and figures, no baseline, no ratio, no verdict, no
// factor effect, and the heading says so and how to read each cell's OOM message. Naming a
// baseline there is still an error.
TEST_F(CompareTest, AnExperimentWhoseEveryCellRanOutOfMemoryListsItsCellsWithoutABaseline) {
  {
    ResultsDb db(path_, ResultsDb::Mode::kReadWrite);
    const int64_t id = db.EnsureExperiment("too-big", "too-big.toml", "[matrix]\n");
    int64_t cell = 0;
    for (const char* params : {R"({"a":1})", R"({"a":2})"}) {
      const int64_t run = db.ClaimRun(
          id, testing_support::MakeCell("t" + std::to_string(cell), cell, 0, params), 1);
      const nlohmann::json result =
          testing_support::FiguresResult("oom", 7000 + cell, 8000 + cell, 0, 0);
      db.FinishRun(run, RunStatus::kOom, "out of memory", &result);
      ++cell;
    }
  }
  const Comparison c = RunCompare("", "too-big");
  EXPECT_FALSE(c.baseline.has_value());
  ASSERT_EQ(c.cells.rows.size(), 2u);
  for (size_t row = 0; row < 2; ++row) {
    EXPECT_EQ(At(c.cells, row, "status"), "oom");
    EXPECT_EQ(Number(c.cells, row, "peak_allocated_bytes"), 7000.0 + static_cast<double>(row));
    for (const char* empty : {"peak_allocated_ratio", "peak_reserved_ratio", "tokens_per_s_ratio",
                              "final_loss_delta", "verdict", "verdict_reason"}) {
      EXPECT_EQ(At(c.cells, row, empty), std::nullopt) << empty;
    }
  }
  EXPECT_TRUE(c.effects.rows.empty());
  const std::string table = FormatComparison(c, OutputFormat::kTable);
  EXPECT_NE(table.find("baseline: none: no cell ran ok"), std::string::npos) << table;
  EXPECT_NE(table.find("WHERE experiment = 'too-big'"), std::string::npos) << table;
  const nlohmann::json json = nlohmann::json::parse(FormatComparison(c, OutputFormat::kJson));
  EXPECT_TRUE(json["baseline"].is_null());
  EXPECT_EQ(json["cells"].size(), 2u);
  EXPECT_NE(CompareError("a=1", "too-big").find("baseline cell 0 has no ok run (status oom)"),
            std::string::npos);
}

TEST_F(CompareTest, CsvAndJsonOutputs) {
  const Comparison c = RunCompare("");
  const std::string csv = FormatComparison(c, OutputFormat::kCsv);
  EXPECT_NE(csv.find("cell,a,b,n,status,peak_allocated_bytes,peak_allocated_ratio,"
                     "peak_reserved_ratio,estimate,estimated_peak_allocated_bytes,estimate_error,"
                     "activations_bytes,activations_ratio,tokens_per_s,"
                     "tokens_per_s_ratio,final_loss,"
                     "final_loss_delta,verdict,expected,compute_dtype,max_abs_deviation,"
                     "max_rel_deviation,max_deviation_step,tolerance_rel,verdict_reason\r\n"),
            std::string::npos)
      << csv;
  // These hand-made results carry no math-preserving flags: no loss verdict (n/a, with why).
  EXPECT_NE(csv.find("\r\n1,2,x,1,ok,500,0.5,0.5,,,,250,0.5,400.0,2.0,2.75,0.25,n/a,,,,,,,recorded without "
                     "math-preserving flags"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find("\r\n3,2,y,1,oom,4000,4.0,2.048,,,,2000,4.0,,,,,n/a,,,,,,,run status oom\r\n"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find("\r\n0,1,x,2,ok,1000,1.0,1.0,,,,500,1.0,200.0,1.0,2.5,0.0,reference,"), std::string::npos)
      << csv;
  // One table per CSV: the cells by default, the effects when asked for.
  EXPECT_EQ(csv.find("factor,value"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("\r\n\r\n"), std::string::npos) << csv;
  const std::string effects_csv = FormatComparison(
      c, ComparisonFormat{.format = OutputFormat::kCsv, .table = ComparisonTable::kEffects});
  EXPECT_EQ(effects_csv.rfind("factor,value,cells,oom_cells,peak_allocated_ratio,", 0), 0u)
      << effects_csv;
  EXPECT_NE(effects_csv.find("\r\nb,y,1,1,2.0,2.0,0.3333333333333333,-0.375\r\n"),
            std::string::npos)
      << effects_csv;

  const auto json = nlohmann::json::parse(FormatComparison(c, OutputFormat::kJson));
  EXPECT_EQ(json["experiment"]["name"], "ablation");
  EXPECT_EQ(json["baseline"]["cell"], 0);
  EXPECT_EQ(json["baseline"]["params"]["b"], "x");
  EXPECT_EQ(json["cells"].size(), 4u);
  EXPECT_EQ(json["cells"][1]["tokens_per_s_ratio"].get<double>(), 2.0);
  EXPECT_TRUE(json["cells"][3]["tokens_per_s"].is_null());
  EXPECT_EQ(json["effects"][3]["value"], "y");

  const std::string table = FormatComparison(c, OutputFormat::kTable);
  EXPECT_NE(table.find("baseline: cell 0 (a=1, b=x), 2 ok runs"), std::string::npos) << table;
  EXPECT_NE(table.find("effect of each factor"), std::string::npos) << table;
}

TEST(MainEffectsTest, OneCellHasNoFactorsAndRatioOfZeroIsMissing) {
  CellFigures only;
  only.params = {{"a", 1}};
  only.ok_runs = 1;
  EXPECT_TRUE(VaryingKeys({only}).empty());
  EXPECT_TRUE(MainEffects({only}, only).empty());
  EXPECT_FALSE(Ratio(1.0, 0.0).has_value());
  EXPECT_FALSE(Ratio(std::nullopt, 1.0).has_value());
  EXPECT_EQ(Delta(3.0, 1.0), 2.0);
}

}  // namespace
}  // namespace memsweep::results
