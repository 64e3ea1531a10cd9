// Matrix expansion: cartesian order, the nested-table form, exclude and include (GitHub Actions
// semantics), repeats, and --set winning over the matrix. Cells are not validated as runs here
// (the keys are made up); experiment_plan_test.cc covers validation.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/config/config_error.h"
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
      "[matrix]\n\"strategies.batching.micro_batch_size\" = [1, 2]\n"
      "\"device.memory_budget\" = [\"32MiB\"]\n"
      "\"strategies.precision.plugin\" = [\"fp32\", \"bf16-autocast\"]\n");
  const ExperimentPlan nested = Plan(
      "[matrix.strategies.batching]\nmicro_batch_size = [1, 2]\n[matrix.device]\n"
      "memory_budget = [\"32MiB\"]\n[matrix.strategies.precision]\n"
      "plugin = [\"fp32\", \"bf16-autocast\"]\n");
  ASSERT_EQ(quoted.cells.size(), 4u);
  EXPECT_EQ(Params(nested), Params(quoted));
  EXPECT_EQ(nested.varying_keys, quoted.varying_keys);
  for (size_t i = 0; i < quoted.cells.size(); ++i) {
    EXPECT_EQ(nested.cells[i].hash, quoted.cells[i].hash);
  }
}

TEST(MatrixTest, ValuesLandInTheDocumentAndOtherTablesPassThrough) {
  const ExperimentPlan plan = Plan(
      "[data]\npath = \"d.jsonl\"\n[strategies.batching]\nseq_len = 64\nmicro_batch_size = 8\n"
      "[strategies.precision]\nplugin = \"fp32\"\nloss_scale = 1024.0\n"
      "[strategies.checkpointing]\nplugin = \"none\"\n"
      "[matrix]\n\"strategies.batching.micro_batch_size\" = [2]\n"
      "\"strategies.precision.plugin\" = [\"bf16-autocast\"]\n\"strategies.offload.plugin\" = "
      "[\"cpu\"]\n");
  ASSERT_EQ(plan.cells.size(), 1u);
  const toml::table& doc = plan.cells[0].document;
  EXPECT_EQ(doc["data"]["path"].value<std::string>(), "d.jsonl");
  EXPECT_EQ(doc["strategies"]["batching"]["seq_len"].value<int64_t>(), 64);
  EXPECT_EQ(doc["strategies"]["batching"]["micro_batch_size"].value<int64_t>(), 2);
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
      "[matrix]\n\"strategies.batching.micro_batch_size\" = [2, 8]\n"
      "[[matrix.include]]\n\"strategies.batching.micro_batch_size\" = 8\n"
      "\"optimizer.lr\" = 0.001\n");
  const std::vector<json> expected = {
      {{"strategies.batching.micro_batch_size", 2}},
      {{"strategies.batching.micro_batch_size", 8}, {"optimizer.lr", 0.001}}};
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

// Two callbacks: a list of tables whose entries are named by index or by plugin.
const std::string kCallbacks =
    "[[strategies.callbacks]]\nplugin = \"empty_cache\"\nevery = 10\n"
    "[[strategies.callbacks]]\nplugin = \"grad_clip\"\nmax_norm = 1.0\n";

std::string ErrorOf(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    Plan(text, overrides);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(MatrixTest, AListEntryIsAddressedByIndexOrByPlugin) {
  const ExperimentPlan by_index =
      Plan(kCallbacks + "[matrix]\n\"strategies.callbacks.1.max_norm\" = [0.5, 2.0]\n");
  const ExperimentPlan by_name =
      Plan(kCallbacks + "[matrix]\n\"strategies.callbacks.grad_clip.max_norm\" = [0.5, 2.0]\n");
  const ExperimentPlan nested =
      Plan(kCallbacks + "[matrix.strategies.callbacks.grad_clip]\nmax_norm = [0.5, 2.0]\n");
  ASSERT_EQ(by_index.cells.size(), 2u);
  EXPECT_EQ(by_index.cells[1].params, json({{"strategies.callbacks.1.max_norm", 2.0}}));
  EXPECT_EQ(by_name.cells[1].params, json({{"strategies.callbacks.grad_clip.max_norm", 2.0}}));
  for (size_t i = 0; i < 2; ++i) {
    const toml::array& list = *by_index.cells[i].document["strategies"]["callbacks"].as_array();
    ASSERT_EQ(list.size(), 2u);  // the entry changes in place; nothing is added
    EXPECT_EQ(list[0].as_table()->get("every")->value<int64_t>(), 10);
    EXPECT_EQ(list[1].as_table()->get("plugin")->value<std::string>(), "grad_clip");
    EXPECT_EQ(list[1].as_table()->get("max_norm")->value<double>(), i == 0 ? 0.5 : 2.0);
    // The same run whichever way the entry is named: the same document, the same hash.
    EXPECT_EQ(by_name.cells[i].hash, by_index.cells[i].hash);
    EXPECT_EQ(nested.cells[i].hash, by_index.cells[i].hash);
  }
  // A whole entry, and entries of an inline list.
  const ExperimentPlan whole = Plan(
      kCallbacks + "[matrix]\n\"strategies.callbacks.0\" = [{plugin = \"empty_cache\", every = 3}]\n");
  EXPECT_EQ(whole.cells[0].document["strategies"]["callbacks"][0]["every"].value<int64_t>(), 3);
  const ExperimentPlan inline_list =
      Plan("[strategies]\ncallbacks = [{plugin = \"a\", k = 1}, {plugin = \"b\", k = 2}]\n"
           "[matrix]\n\"strategies.callbacks.b.k\" = [5]\n");
  EXPECT_EQ(inline_list.cells[0].document["strategies"]["callbacks"][1]["k"].value<int64_t>(), 5);
}

TEST(MatrixTest, IncludesAblationsAndSetReachListEntries) {
  const ExperimentPlan include = Plan(kCallbacks +
                                      "[matrix]\n\"x.a\" = [1, 2]\n[[matrix.include]]\n"
                                      "\"x.a\" = 2\n\"strategies.callbacks.empty_cache.every\" = 1\n");
  ASSERT_EQ(include.cells.size(), 2u);
  EXPECT_EQ(include.cells[0].document["strategies"]["callbacks"][0]["every"].value<int64_t>(), 10);
  EXPECT_EQ(include.cells[1].document["strategies"]["callbacks"][0]["every"].value<int64_t>(), 1);

  const ExperimentPlan ablation =
      Plan(kCallbacks + "[[ablation]]\nname = \"clip-less\"\n"
                        "\"strategies.callbacks.grad_clip.max_norm\" = 100.0\n");
  ASSERT_EQ(ablation.cells.size(), 2u);
  EXPECT_EQ(ablation.cells[1].document["strategies"]["callbacks"][1]["max_norm"].value<double>(),
            100.0);

  const ExperimentPlan set = Plan(kCallbacks, {"strategies.callbacks.grad_clip.max_norm=0.25",
                                               "strategies.callbacks.0.every=4"});
  EXPECT_EQ(set.cells[0].document["strategies"]["callbacks"][0]["every"].value<int64_t>(), 4);
  EXPECT_EQ(set.cells[0].document["strategies"]["callbacks"][1]["max_norm"].value<double>(), 0.25);

  // A --set of the entry pins the matrix key, whichever way either names it.
  const ExperimentPlan pinned =
      Plan(kCallbacks + "[matrix]\n\"strategies.callbacks.grad_clip.max_norm\" = [0.5, 2.0]\n",
           {"strategies.callbacks.1.max_norm=3.0"});
  ASSERT_EQ(pinned.cells.size(), 1u);
  EXPECT_EQ(pinned.cells[0].params, json({{"strategies.callbacks.grad_clip.max_norm", 3.0}}));
  EXPECT_EQ(pinned.cells[0].document["strategies"]["callbacks"][1]["max_norm"].value<double>(),
            3.0);
  // A --set replacing the matrix's list, in the entry's words.
  EXPECT_EQ(Plan(kCallbacks, {"matrix.strategies.callbacks.0.every=[1, 2, 3]"}).cells.size(), 3u);
}

TEST(MatrixTest, AnEntryThatIsNotInTheListIsAnErrorNamingTheListAndItsEntries) {
  const std::string list = "'strategies.callbacks' (" + kSource + ":1)";
  const std::string out_of_range =
      ErrorOf(kCallbacks + "[matrix]\n\"strategies.callbacks.2.every\" = [1]\n");
  EXPECT_EQ(out_of_range.rfind(kSource + ":8:1: cannot set 'strategies.callbacks.2.every': " +
                                   list + " has no entry '2'; its entries are 0 (empty_cache), 1 "
                                          "(grad_clip): name one by its index (0 to 1) or by its "
                                          "plugin",
                               0),
            0u)
      << out_of_range;
  EXPECT_NE(out_of_range.find("; in cell 0"), std::string::npos) << out_of_range;
  const std::string unknown =
      ErrorOf(kCallbacks + "[[matrix.include]]\n\"strategies.callbacks.grad_klip.max_norm\" = 1\n");
  EXPECT_EQ(unknown.rfind(kSource + ":8:", 0), 0u) << unknown;  // the include's value
  EXPECT_NE(unknown.find(": cannot set 'strategies.callbacks.grad_klip.max_norm': " + list +
                         " has no entry 'grad_klip'; its entries are 0 (empty_cache), 1 "
                         "(grad_clip): name one by its index (0 to 1) or by its plugin"),
            std::string::npos)
      << unknown;
  const std::string twice = ErrorOf(
      "[[strategies.callbacks]]\nplugin = \"empty_cache\"\n[[strategies.callbacks]]\n"
      "plugin = \"empty_cache\"\n[matrix]\n\"strategies.callbacks.empty_cache.every\" = [1]\n");
  EXPECT_NE(twice.find(" has several entries with plugin \"empty_cache\": name one by its index "
                       "(0 or 1)"),
            std::string::npos)
      << twice;
  const std::string set = ErrorOf(kCallbacks, {"strategies.callbacks.7.every=1"});
  EXPECT_EQ(set, "--set strategies.callbacks.7.every=1: cannot set 'strategies.callbacks.7.every': " +
                     list + " has no entry '7'; its entries are 0 (empty_cache), 1 (grad_clip): "
                            "name one by its index (0 to 1) or by its plugin");
}

TEST(MatrixTest, TwoKeysNamingOneListEntryOverlap) {
  const std::string error =
      ErrorOf(kCallbacks + "[matrix]\n\"strategies.callbacks.1.max_norm\" = [0.5]\n"
                           "\"strategies.callbacks.grad_clip.max_norm\" = [2.0]\n");
  EXPECT_EQ(error.rfind(kSource + ":9:1: [matrix] keys 'strategies.callbacks.1.max_norm' and "
                                  "'strategies.callbacks.grad_clip.max_norm' overlap: both name "
                                  "one value, a list entry by its index and by its plugin",
                        0),
            0u)
      << error;
}

}  // namespace
}  // namespace memsweep::experiment
