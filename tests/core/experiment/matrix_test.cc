// Matrix expansion: cartesian order, the nested-table form, exclude and include (GitHub Actions
// semantics), repeats, and --set winning over the matrix. Cells are not validated as runs here
// (the keys are made up); experiment_plan_test.cc covers validation.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/config/config_error.h"
#include "core/experiment/dotted_keys.h"
#include "core/experiment/experiment_plan.h"
#include "support/run_configs.h"

namespace memsweep::experiment {
namespace {

using nlohmann::json;

const std::string kSource = testing_support::SourcePath("experiments/test.toml");

void AcceptAll(const Cell&) {}

ExperimentPlan Plan(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return ParseExperimentPlan(text, kSource, overrides, AcceptAll);
}

std::vector<json> Params(const ExperimentPlan& plan) {
  std::vector<json> params;
  for (const Cell& cell : plan.cells) params.push_back(cell.params);
  return params;
}

TEST(MatrixTest, CartesianProductInFileOrderFirstKeySlowest) {
  // File order, not alphabetical order, decides which key varies slowest.
  const ExperimentPlan plan =
      Plan("[matrix]\n\"z.first\" = [1, 2]\n\"a.second\" = [\"x\", \"y\", \"z\"]\n");
  ASSERT_EQ(plan.cells.size(), 6u);
  EXPECT_EQ(plan.combinations, 6);
  EXPECT_EQ(plan.varying_keys, (std::vector<std::string>{"z.first", "a.second"}));
  const std::vector<json> expected = {
      {{"z.first", 1}, {"a.second", "x"}}, {{"z.first", 1}, {"a.second", "y"}},
      {{"z.first", 1}, {"a.second", "z"}}, {{"z.first", 2}, {"a.second", "x"}},
      {{"z.first", 2}, {"a.second", "y"}}, {{"z.first", 2}, {"a.second", "z"}}};
  EXPECT_EQ(Params(plan), expected);
  for (size_t i = 0; i < plan.cells.size(); ++i) {
    const Cell& cell = plan.cells[i];
    EXPECT_EQ(cell.index, static_cast<int64_t>(i));
    EXPECT_EQ(cell.combination, static_cast<int64_t>(i));
    EXPECT_EQ(cell.repeat, 0);
    EXPECT_FALSE(cell.document.contains("matrix"));
    // get<>(): g++ 13 in C++20 finds no operator== between a std::string and a json.
    EXPECT_EQ(*FindAtPath(cell.document, "z.first")->value<int64_t>(),
              expected[i]["z.first"].get<int64_t>());
    EXPECT_EQ(*FindAtPath(cell.document, "a.second")->value<std::string>(),
              expected[i]["a.second"].get<std::string>());
  }
  EXPECT_EQ(plan.cells[1].Label(), "a.second=y z.first=1");
}

TEST(MatrixTest, NestedTablesAndDottedKeysFlattenToTheQuotedForm) {
  const ExperimentPlan quoted = Plan(
      "[matrix]\n\"data.micro_batch_size\" = [1, 2]\n\"device.memory_budget\" = [\"32MiB\"]\n"
      "\"strategies.precision.plugin\" = [\"fp32\", \"bf16-autocast\"]\n");
  const ExperimentPlan nested = Plan(
      "[matrix.data]\nmicro_batch_size = [1, 2]\n[matrix.device]\nmemory_budget = [\"32MiB\"]\n"
      "[matrix.strategies]\nprecision.plugin = [\"fp32\", \"bf16-autocast\"]\n");
  ASSERT_EQ(quoted.cells.size(), 4u);
  EXPECT_EQ(Params(nested), Params(quoted));
  EXPECT_EQ(nested.varying_keys, quoted.varying_keys);
  for (size_t i = 0; i < quoted.cells.size(); ++i) {
    EXPECT_EQ(nested.cells[i].hash, quoted.cells[i].hash);
  }
}

TEST(MatrixTest, ValuesLandInTheDocumentAndOtherTablesPassThrough) {
  const ExperimentPlan plan = Plan(
      "[data]\nseq_len = 64\nmicro_batch_size = 8\n"
      "[strategies.precision]\nplugin = \"fp32\"\nloss_scale = 1024.0\n"
      "[strategies.checkpointing]\nplugin = \"none\"\n"
      "[matrix]\n\"data.micro_batch_size\" = [2]\n"
      "\"strategies.precision.plugin\" = [\"bf16-autocast\"]\n\"strategies.offload.plugin\" = "
      "[\"cpu\"]\n");
  ASSERT_EQ(plan.cells.size(), 1u);
  const toml::table& doc = plan.cells[0].document;
  EXPECT_EQ(doc["data"]["seq_len"].value<int64_t>(), 64);
  EXPECT_EQ(doc["data"]["micro_batch_size"].value<int64_t>(), 2);
  EXPECT_EQ(doc["strategies"]["precision"]["plugin"].value<std::string>(), "bf16-autocast");
  EXPECT_EQ(doc["strategies"]["precision"]["loss_scale"].value<double>(), 1024.0);
  EXPECT_EQ(doc["strategies"]["checkpointing"]["plugin"].value<std::string>(), "none");
  EXPECT_EQ(doc["strategies"]["offload"]["plugin"].value<std::string>(), "cpu");  // created
}

TEST(MatrixTest, ExcludeRemovesEveryCombinationMatchingAllItsKeys) {
  const ExperimentPlan plan = Plan(
      "[matrix]\n\"x.a\" = [1, 2, 3]\n\"x.b\" = [\"p\", \"q\"]\n"
      "[[matrix.exclude]]\n\"x.a\" = 2\n"  // partial: both b values go
      "[[matrix.exclude]]\n\"x.a\" = 3\n\"x.b\" = \"q\"\n"
      "[[matrix.exclude]]\n\"x.a\" = 1\n\"x.b\" = \"r\"\n");  // matches nothing
  const std::vector<json> expected = {
      {{"x.a", 1}, {"x.b", "p"}}, {{"x.a", 1}, {"x.b", "q"}}, {{"x.a", 3}, {"x.b", "p"}}};
  EXPECT_EQ(Params(plan), expected);
  EXPECT_EQ(plan.cells[2].combination, 2);
}

// The example of the GitHub Actions documentation for jobs.<job_id>.strategy.matrix.include.
TEST(MatrixTest, IncludeExtendsMatchingCombinationsOrAddsItsOwn) {
  const ExperimentPlan plan = Plan(
      "[matrix]\n\"x.fruit\" = [\"apple\", \"pear\"]\n\"x.animal\" = [\"cat\", \"dog\"]\n"
      "[[matrix.include]]\n\"x.color\" = \"green\"\n"                         // every combination
      "[[matrix.include]]\n\"x.color\" = \"pink\"\n\"x.animal\" = \"cat\"\n"  // overwrites added
      "[[matrix.include]]\n\"x.fruit\" = \"apple\"\n\"x.shape\" = \"circle\"\n"
      "[[matrix.include]]\n\"x.fruit\" = \"banana\"\n"                            // new combination
      "[[matrix.include]]\n\"x.fruit\" = \"banana\"\n\"x.animal\" = \"cat\"\n");  // another one
  const std::vector<json> expected = {
      {{"x.fruit", "apple"}, {"x.animal", "cat"}, {"x.color", "pink"}, {"x.shape", "circle"}},
      {{"x.fruit", "apple"}, {"x.animal", "dog"}, {"x.color", "green"}, {"x.shape", "circle"}},
      {{"x.fruit", "pear"}, {"x.animal", "cat"}, {"x.color", "pink"}},
      {{"x.fruit", "pear"}, {"x.animal", "dog"}, {"x.color", "green"}},
      {{"x.fruit", "banana"}},
      {{"x.fruit", "banana"}, {"x.animal", "cat"}}};
  EXPECT_EQ(Params(plan), expected);
  EXPECT_EQ(plan.varying_keys,
            (std::vector<std::string>{"x.fruit", "x.animal", "x.color", "x.shape"}));
  EXPECT_EQ(plan.cells[0].document["x"]["shape"].value<std::string>(), "circle");
  EXPECT_FALSE(plan.cells[4].document["x"]["animal"]);
}

TEST(MatrixTest, IncludeMayAddANonMatrixKeyToSomeCombinations) {
  const ExperimentPlan plan = Plan(
      "[optimizer]\nlr = 0.003\n"
      "[matrix]\n\"data.micro_batch_size\" = [2, 8]\n"
      "[[matrix.include]]\n\"data.micro_batch_size\" = 8\n\"optimizer.lr\" = 0.001\n");
  const std::vector<json> expected = {{{"data.micro_batch_size", 2}},
                                      {{"data.micro_batch_size", 8}, {"optimizer.lr", 0.001}}};
  EXPECT_EQ(Params(plan), expected);
  EXPECT_EQ(plan.cells[0].document["optimizer"]["lr"].value<double>(), 0.003);
  EXPECT_EQ(plan.cells[1].document["optimizer"]["lr"].value<double>(), 0.001);
}

TEST(MatrixTest, IncludesComeAfterExcludes) {
  const ExperimentPlan plan = Plan(
      "[matrix]\n\"x.a\" = [1, 2]\n\"x.b\" = [1, 2]\n"
      "[[matrix.exclude]]\n\"x.a\" = 2\n\"x.b\" = 2\n"
      "[[matrix.include]]\n\"x.a\" = 2\n\"x.b\" = 2\n\"x.c\" = true\n");
  const std::vector<json> expected = {{{"x.a", 1}, {"x.b", 1}},
                                      {{"x.a", 1}, {"x.b", 2}},
                                      {{"x.a", 2}, {"x.b", 1}},
                                      {{"x.a", 2}, {"x.b", 2}, {"x.c", true}}};
  EXPECT_EQ(Params(plan), expected);
}

TEST(MatrixTest, RepeatsRunEveryCombinationWithDistinctSeeds) {
  const ExperimentPlan plan =
      Plan("[experiment]\nseed = 10\nrepeats = 3\n[matrix]\n\"x.a\" = [1, 2]\n");
  ASSERT_EQ(plan.cells.size(), 6u);
  EXPECT_EQ(plan.combinations, 2);
  std::set<std::string> hashes;
  for (size_t i = 0; i < plan.cells.size(); ++i) {
    const Cell& cell = plan.cells[i];
    EXPECT_EQ(cell.index, static_cast<int64_t>(i));
    EXPECT_EQ(cell.combination, static_cast<int64_t>(i / 3));
    EXPECT_EQ(cell.repeat, static_cast<int64_t>(i % 3));
    EXPECT_EQ(cell.seed, 10u + i % 3);
    EXPECT_EQ(cell.document["experiment"]["seed"].value<int64_t>(),
              static_cast<int64_t>(cell.seed));
    EXPECT_FALSE(cell.document["experiment"]["repeats"]) << "a cell is one run";
    hashes.insert(cell.hash);
  }
  EXPECT_EQ(hashes.size(), 6u);
}

TEST(MatrixTest, WithoutAMatrixTheFileIsOneCellPerRepeat) {
  const ExperimentPlan plan = Plan("[experiment]\nname = \"plain\"\nrepeats = 2\n");
  EXPECT_EQ(plan.name, "plain");
  ASSERT_EQ(plan.cells.size(), 2u);
  EXPECT_EQ(plan.cells[0].seed, 1234u);  // the default seed
  EXPECT_EQ(plan.cells[1].seed, 1235u);
  EXPECT_EQ(plan.cells[0].Label(), "");
  EXPECT_TRUE(plan.varying_keys.empty());
}

TEST(MatrixTest, AnIncludeMayRepeatOneCombinationMoreOften) {
  const ExperimentPlan plan = Plan(
      "[matrix]\n\"x.a\" = [1, 2]\n[[matrix.include]]\n\"x.a\" = 2\n\"experiment.repeats\" = 2\n");
  ASSERT_EQ(plan.cells.size(), 3u);
  EXPECT_EQ(plan.cells[2].combination, 1);
  EXPECT_EQ(plan.cells[2].repeat, 1);
  EXPECT_EQ(plan.cells[2].seed, 1235u);
}

TEST(MatrixTest, SetOfAMatrixKeyWinsOverTheMatrix) {
  const std::string text =
      "[matrix]\n\"x.a\" = [1, 2]\n\"x.b\" = [\"p\", \"q\"]\n"
      "[[matrix.exclude]]\n\"x.a\" = 5\n\"x.b\" = \"q\"\n"
      "[[matrix.include]]\n\"x.a\" = 1\n\"x.c\" = 1\n"   // cannot hold with x.a = 5: dropped
      "[[matrix.include]]\n\"x.a\" = 5\n\"x.d\" = 1\n";  // agrees with the --set value
  const ExperimentPlan plan = Plan(text, {"x.a=5"});
  const std::vector<json> expected = {{{"x.a", 5}, {"x.b", "p"}, {"x.d", 1}}};
  EXPECT_EQ(Params(plan), expected);
  EXPECT_EQ(plan.cells[0].document["x"]["a"].value<int64_t>(), 5);

  // A --set of a key an include entry adds wins over the entry (which, left with x.a = 5 only,
  // becomes a combination of its own); other --set keys just apply.
  const ExperimentPlan other = Plan(text, {"x.d=7", "y.z=1"});
  ASSERT_EQ(other.cells.size(), 5u);
  EXPECT_EQ(other.cells[4].params, json({{"x.a", 5}}));
  for (const Cell& cell : other.cells) {
    EXPECT_EQ(cell.document["x"]["d"].value<int64_t>(), 7);
    EXPECT_FALSE(cell.params.contains("x.d"));
    EXPECT_EQ(cell.document["y"]["z"].value<int64_t>(), 1);
  }

  // Setting the table that holds a matrix key pins it too; setting inside a matrix value that
  // is varied as a whole is refused.
  EXPECT_EQ(Plan("[matrix]\n\"x.t.u\" = [1, 2]\n", {"x.t={u = 3}"}).cells.size(), 1u);
  try {
    Plan("[matrix]\n\"x.t\" = [{u = 1}, {u = 2}]\n", {"x.t.u=3"});
    FAIL() << "expected a ConfigError";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--set x.t.u=3: [matrix] varies 'x.t' as a whole"),
              std::string::npos)
        << e.what();
  }
}

TEST(MatrixTest, SetOfAMatrixListReplacesItInEitherForm) {
  const std::vector<std::string> set = {"matrix.x.a=[3, 4, 5]"};
  const std::vector<json> expected = {
      {{"x.a", 3}, {"x.b", 1}}, {{"x.a", 4}, {"x.b", 1}}, {{"x.a", 5}, {"x.b", 1}}};
  EXPECT_EQ(Params(Plan("[matrix]\n\"x.a\" = [1]\n\"x.b\" = [1]\n", set)), expected);
  EXPECT_EQ(Params(Plan("[matrix.x]\na = [1]\nb = [1]\n", set)), expected);
  EXPECT_EQ(Params(Plan("", set)), (std::vector<json>{{{"x.a", 3}}, {{"x.a", 4}}, {{"x.a", 5}}}));
}

}  // namespace
}  // namespace memsweep::experiment
