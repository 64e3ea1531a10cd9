// [[ablation]]: the variants (baseline, +step, all, all-step), their documents, crossing with a
// matrix, --set, and the errors for malformed steps. Cells are not validated as runs here.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config/config_error.h"
#include "core/experiment/ablation.h"
#include "core/config/dotted_keys.h"
#include "core/experiment/experiment_plan.h"
#include "support/run_configs.h"

namespace memsweep::experiment {
namespace {

using config::FindAtPath;
using nlohmann::json;

const std::string kSource = testing_support::SourcePath("experiments/test.toml");

void AcceptAll(const Cell&) {}

ExperimentPlan Plan(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return ParseExperimentPlan(text, kSource, overrides, AcceptAll);
}

std::vector<std::string> Labels(const ExperimentPlan& plan) {
  std::vector<std::string> labels;
  for (const Cell& cell : plan.cells) labels.push_back(cell.params.value("ablation", ""));
  return labels;
}

int64_t IntAt(const Cell& cell, const std::string& key) {
  const toml::node* node = FindAtPath(cell.document, key);
  return node == nullptr ? -1 : node->value<int64_t>().value_or(-2);
}

std::string ErrorOf(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    Plan(text, overrides);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

const char* kThreeSteps =
    "[x]\na = 0\nb = 0\nc = 0\nd = 0\n"
    "[[ablation]]\nname = \"first\"\n\"x.a\" = 1\n\"x.d\" = 4\n"
    "[[ablation]]\nname = \"second\"\n\"x.b\" = 2\n"
    "[[ablation]]\nname = \"third\"\nx.c = 3\n";  // the dotted form works too

TEST(AblationTest, BaselineEachStepAllAndAllButEach) {
  const ExperimentPlan plan = Plan(kThreeSteps);
  EXPECT_EQ(Labels(plan), (std::vector<std::string>{"baseline", "+first", "+second", "+third",
                                                   "all", "all-first", "all-second",
                                                   "all-third"}));
  EXPECT_EQ(plan.varying_keys, (std::vector<std::string>{"ablation"}));
  // Which keys each cell changes: first = {a, d}, second = {b}, third = {c}.
  const std::vector<std::vector<int64_t>> expected = {
      {0, 0, 0, 0}, {1, 0, 0, 4}, {0, 2, 0, 0}, {0, 0, 3, 0},
      {1, 2, 3, 4}, {0, 2, 3, 0}, {1, 0, 3, 4}, {1, 2, 0, 4}};
  for (size_t i = 0; i < plan.cells.size(); ++i) {
    const Cell& cell = plan.cells[i];
    EXPECT_EQ((std::vector<int64_t>{IntAt(cell, "x.a"), IntAt(cell, "x.b"), IntAt(cell, "x.c"),
                                    IntAt(cell, "x.d")}),
              expected[i])
        << cell.Describe();
    EXPECT_FALSE(cell.document.contains("ablation"));
    EXPECT_EQ(cell.params, json({{"ablation", Labels(plan)[i]}}));  // step keys not repeated
  }
  EXPECT_EQ(plan.cells[1].Label(), "ablation=+first");
}

TEST(AblationTest, VariantsWithTheSameStepsAreListedOnce) {
  std::vector<AblationStep> steps(1);
  steps[0].name = "only";
  std::vector<std::string> labels;
  for (const auto& v : AblationVariants(steps)) labels.push_back(v.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"baseline", "+only"}));

  steps.resize(2);
  steps[1].name = "other";
  labels.clear();
  for (const auto& v : AblationVariants(steps)) labels.push_back(v.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"baseline", "+only", "+other", "all"}));
  EXPECT_TRUE(AblationVariants({}).empty());
}

TEST(AblationTest, CrossedWithTheMatrixAndItsRepeats) {
  const ExperimentPlan plan = Plan(
      "[experiment]\nrepeats = 2\nseed = 10\n[x]\na = 0\n"
      "[matrix]\n\"y.m\" = [1, 2]\n"
      "[[ablation]]\nname = \"s\"\n\"x.a\" = 5\n");
  ASSERT_EQ(plan.cells.size(), 8u);  // 2 matrix values x 2 variants x 2 repeats
  EXPECT_EQ(plan.combinations, 4);
  EXPECT_EQ(plan.cells[0].params, json({{"y.m", 1}, {"ablation", "baseline"}}));
  EXPECT_EQ(plan.cells[2].params, json({{"y.m", 1}, {"ablation", "+s"}}));
  EXPECT_EQ(plan.cells[7].params, json({{"y.m", 2}, {"ablation", "+s"}}));
  EXPECT_EQ(plan.cells[3].seed, 11u);
  EXPECT_EQ(IntAt(plan.cells[0], "x.a"), 0);
  EXPECT_EQ(IntAt(plan.cells[3], "x.a"), 5);
  EXPECT_EQ(IntAt(plan.cells[7], "y.m"), 2);
  EXPECT_EQ(plan.varying_keys, (std::vector<std::string>{"y.m", "ablation"}));
}

TEST(AblationTest, SetOfAStepKeyWinsInEveryCell) {
  const ExperimentPlan plan = Plan(kThreeSteps, {"x.b=9", "x.d=7"});
  for (const Cell& cell : plan.cells) {
    EXPECT_EQ(IntAt(cell, "x.b"), 9) << cell.Describe();
    EXPECT_EQ(IntAt(cell, "x.d"), 7) << cell.Describe();
  }
  // "second" changes nothing any more and is left out; "first" keeps x.a.
  EXPECT_EQ(Labels(plan), (std::vector<std::string>{"baseline", "+first", "+third", "all"}));
  EXPECT_EQ(IntAt(plan.cells[1], "x.a"), 1);
  // A table a step sets is flattened into its keys: a --set of one of them drops that key.
  const ExperimentPlan table = Plan("[[ablation]]\nname = \"s\"\n\"x.t\" = {u = 1, v = 2}\n",
                                    {"x.t.u=9"});
  ASSERT_EQ(table.cells.size(), 2u);
  EXPECT_EQ(IntAt(table.cells[1], "x.t.u"), 9);
  EXPECT_EQ(IntAt(table.cells[1], "x.t.v"), 2);
}

TEST(AblationTest, MalformedStepsAreClearErrors) {
  auto expect_error = [](const std::string& text, const std::string& part) {
    const std::string error = ErrorOf(text);
    EXPECT_NE(error.find(part), std::string::npos) << error;
    EXPECT_NE(error.find("test.toml:"), std::string::npos) << error;
  };
  expect_error("ablation = 3\n", "'ablation' must be an array of tables");
  expect_error("[[ablation]]\n\"x.a\" = 1\n", "needs a name");
  expect_error("[[ablation]]\nname = \"a b\"\n\"x.a\" = 1\n", "must not contain spaces");
  expect_error("[[ablation]]\nname = \"a\"\n", "changes nothing");
  expect_error("[[ablation]]\nname = \"a\"\n\"x.a\" = 1\n[[ablation]]\nname = \"a\"\n\"x.b\" = 1\n",
               "is used twice");
  expect_error("[[ablation]]\nname = \"a\"\n\"x.t\" = {u = 1}\n"
               "[[ablation]]\nname = \"b\"\n\"x.t.u\" = 2\n",
               "which step \"a\" sets too");
  expect_error("[matrix]\n\"x.a\" = [1, 2]\n[[ablation]]\nname = \"a\"\n\"x.a\" = 3\n",
               "which [matrix] varies");
  expect_error("[[ablation]]\nname = \"a\"\nplain = 1\n", "must be a dotted key");
  // The line of the offending key is named.
  EXPECT_NE(ErrorOf("[[ablation]]\nname = \"a\"\n\"x.a\" = 1\n[[ablation]]\nname = \"b\"\n"
                    "\"x.a\" = 2\n")
                .find("test.toml:6:"),
            std::string::npos);
}

}  // namespace
}  // namespace memsweep::experiment
