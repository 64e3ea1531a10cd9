// [experiment] reference: which cell the other cells' losses are verified against. Checked when
// the plan is made (errors name file:line:column), paired repeat by repeat, and kept out of the
// cells' documents (a reference does not change what a cell runs, nor its hash).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/config/config_error.h"
#include "core/experiment/cell_selector.h"
#include "core/experiment/experiment_plan.h"
#include "support/cli_runner.h"
#include "support/run_configs.h"

namespace memsweep::experiment {
namespace {

using testing_support::SourcePath;

const std::string kSource = SourcePath("experiments/test.toml");

void AcceptAll(const Cell&) {}

const std::string kMatrix =
    "[matrix]\n"
    "\"strategies.checkpointing.plugin\" = [\"none\", \"full\"]\n"
    "\"strategies.batching.micro_batch_size\" = [1, 4]\n";

std::string ErrorOf(const std::string& text) {
  try {
    ParseExperimentPlan(text, kSource, {}, AcceptAll);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

void ExpectError(const std::string& reference_line, const std::string& problem) {
  const std::string error = ErrorOf("[experiment]\n" + reference_line + "\n" + kMatrix);
  EXPECT_EQ(error.rfind(kSource + ":2:", 0), 0u) << error;
  EXPECT_NE(error.find(problem), std::string::npos) << error;
}

TEST(ExperimentReferenceTest, NamesOneCellAndPairsRepeats) {
  const ExperimentPlan plan = ParseExperimentPlan(
      "[experiment]\nrepeats = 2\n"
      "reference = \"strategies.checkpointing.plugin=none, strategies.batching.micro_batch_size=4\"\n" +
          kMatrix,
      kSource, {}, AcceptAll);
  ASSERT_TRUE(plan.reference_combination);
  EXPECT_EQ(*plan.reference_combination, 1);  // none x 4
  ASSERT_EQ(plan.cells.size(), 8u);
  for (const Cell& cell : plan.cells) {
    const Cell& reference = plan.cells[2 + cell.repeat];
    EXPECT_EQ(reference.combination, 1);
    EXPECT_EQ(cell.reference_hash, reference.hash) << cell.Describe();
    EXPECT_EQ(cell.document.at_path("experiment.reference").node(), nullptr);
  }
}

TEST(ExperimentReferenceTest, DoesNotChangeTheCells) {
  const ExperimentPlan without = ParseExperimentPlan(kMatrix, kSource, {}, AcceptAll);
  const ExperimentPlan with = ParseExperimentPlan(
      "[experiment]\nreference = \"strategies.checkpointing.plugin=full,"
      "strategies.batching.micro_batch_size=1.0\"\n" + kMatrix,
      kSource, {}, AcceptAll);
  ASSERT_EQ(without.cells.size(), with.cells.size());
  for (size_t i = 0; i < with.cells.size(); ++i) {
    EXPECT_EQ(without.cells[i].hash, with.cells[i].hash);
    EXPECT_TRUE(without.cells[i].reference_hash.empty());
    EXPECT_EQ(with.cells[i].reference_hash, with.cells[2].hash);  // full x 1 (1.0 matches 1)
  }
}

TEST(ExperimentReferenceTest, BadSelectorsAreErrorsAtTheirLine) {
  ExpectError("reference = 3", "[experiment] reference must be a string of key=value pairs");
  ExpectError("reference = \"\"", "expected key=value[,key=value]");
  ExpectError("reference = \"none\"", "expected key=value[,key=value], got 'none'");
  ExpectError("reference = \"=none\"", "got '=none'");
  ExpectError("reference = \"optimizer.lr=1\"",
              "no cell has a parameter 'optimizer.lr'; name matrix keys "
              "(strategies.checkpointing.plugin, strategies.batching.micro_batch_size)");
  ExpectError("reference = \"strategies.checkpointing.plugin=every_k\"",
              "'strategies.checkpointing.plugin=every_k' matches no cell; the cells are: cell 0 "
              "(strategies.batching.micro_batch_size=1 strategies.checkpointing.plugin=none)");
  ExpectError("reference = \"strategies.checkpointing.plugin=none\"",
              "matches 2 cells (cell 0 (strategies.batching.micro_batch_size=1 "
              "strategies.checkpointing.plugin=none); cell 1 (strategies.batching.micro_batch_size=4 "
              "strategies.checkpointing.plugin=none)); add key=value pairs until it names one");
}

TEST(ExperimentReferenceTest, WithoutMatrixThereIsNothingToName) {
  const std::string error = ErrorOf("[experiment]\nreference = \"a.b=1\"\n");
  EXPECT_NE(error.find("this file has no [matrix]"), std::string::npos) << error;
}

TEST(ExperimentReferenceTest, PlanCommandShowsTheReferenceAndRejectsABadOne) {
  const auto dir = testing_support::FreshTempDir("reference_plan");
  const std::string data = SourcePath("experiments/data/devils-dictionary.jsonl");
  const auto write = [&](const std::string& name, const std::string& reference) {
    const std::string file = (dir / name).string();
    std::ofstream(file) << "[experiment]\nreference = \"" << reference << "\"\n"
                        << "[data]\npath = \"" << data << "\"\n" << kMatrix;
    return file;
  };
  const auto good = testing_support::RunMemsweep(
      "plan " + write("good.toml",
                      "strategies.checkpointing.plugin=full,strategies.batching.micro_batch_size=4"));
  EXPECT_EQ(good.exit_code, 0) << good.output;
  EXPECT_NE(good.output.find("reference   cell 3 ("), std::string::npos) << good.output;

  const std::string bad_file = write("bad.toml", "strategies.checkpointing.plugin=full");
  for (const char* command : {"plan ", "run --db /nonexistent/dir/x.db "}) {
    const auto bad = testing_support::RunMemsweep(command + bad_file);
    EXPECT_EQ(bad.exit_code, 2) << bad.output;
    EXPECT_NE(bad.output.find("error: " + bad_file + ":2:13: [experiment] reference"),
              std::string::npos)
        << bad.output;
    EXPECT_NE(bad.output.find("matches 2 cells"), std::string::npos) << bad.output;
  }
}

TEST(CellSelectorTest, MatchesTextAndNumbers) {
  const CellSelector selector = ParseCellSelector(" a.b = x , c.d=8");
  ASSERT_EQ(selector.pairs.size(), 2u);
  EXPECT_TRUE(selector.Matches({{"a.b", "x"}, {"c.d", 8.0}}));
  EXPECT_TRUE(selector.Matches({{"a.b", "x"}, {"c.d", 8}, {"e", 1}}));
  EXPECT_FALSE(selector.Matches({{"a.b", "x"}}));
  EXPECT_FALSE(selector.Matches({{"a.b", "y"}, {"c.d", 8}}));
  EXPECT_TRUE(ParamValueMatches("x", "\"x\""));
  EXPECT_FALSE(ParamValueMatches(8, "8x"));
}

// A matrix that varies whole tables (a plugin with its options) is named by a field inside them.
TEST(CellSelectorTest, ReachesIntoTableValuedParameters) {
  const nlohmann::json zero3 = {{"s.sharding", {{"plugin", "zero3"}, {"offload", "cpu"}}}, {"n", 2}};
  EXPECT_TRUE(ParseCellSelector("s.sharding.plugin=zero3").Matches(zero3));
  EXPECT_TRUE(ParseCellSelector("s.sharding.plugin=zero3,s.sharding.offload=cpu,n=2").Matches(zero3));
  EXPECT_FALSE(ParseCellSelector("s.sharding.plugin=ddp").Matches(zero3));
  EXPECT_FALSE(ParseCellSelector("s.sharding.missing=x").Matches(zero3));
  EXPECT_FALSE(ParseCellSelector("s.shard.plugin=zero3").Matches(zero3)) << "a prefix ends at a dot";
  ASSERT_NE(FindParam(zero3, "s.sharding"), nullptr);
  EXPECT_TRUE(FindParam(zero3, "s.sharding")->is_object());
  EXPECT_EQ(FindParam(zero3, "n.x"), nullptr) << "a number has no fields";
}

}  // namespace
}  // namespace memsweep::experiment
