// How cells' parameters read in tables: short unambiguous key names (a slot's plugin key named
// by its slot) and values on one line.
#include "core/experiment/cell.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config/config_error.h"

namespace memsweep::experiment {
namespace {

using nlohmann::json;
using Names = std::map<std::string, std::string>;

TEST(CellTest, ShortParamNamesNameTheSlotOfAPluginKey) {
  EXPECT_EQ(ShortParamNames({"strategies.checkpointing.plugin", "strategies.precision.plugin"}),
            (Names{{"strategies.checkpointing.plugin", "checkpointing"},
                   {"strategies.precision.plugin", "precision"}}));
  EXPECT_EQ(ShortParamNames({"strategies.precision.plugin"}),
            (Names{{"strategies.precision.plugin", "precision"}}));
  // The quickstart's names stay what the README prints.
  EXPECT_EQ(ShortParamNames({"device.memory_budget", "strategies.batching.micro_batch_size"}),
            (Names{{"device.memory_budget", "memory_budget"},
                   {"strategies.batching.micro_batch_size", "micro_batch_size"}}));
  EXPECT_EQ(ShortParamNames({"ablation", "strategies.sharding"}),
            (Names{{"ablation", "ablation"}, {"strategies.sharding", "sharding"}}));
}

TEST(CellTest, ShortParamNamesGrowUntilNoOtherKeyEndsTheSameWay) {
  EXPECT_EQ(ShortParamNames({"strategies.callbacks.0.every", "strategies.checkpointing.every"}),
            (Names{{"strategies.callbacks.0.every", "callbacks.0.every"},
                   {"strategies.checkpointing.every", "checkpointing.every"}}));
  EXPECT_EQ(ShortParamNames({"strategies.callbacks.grad_clip.max_norm"}),
            (Names{{"strategies.callbacks.grad_clip.max_norm", "max_norm"}}));
  EXPECT_EQ(ShortParamNames({"strategies.callbacks.1.plugin"}),
            (Names{{"strategies.callbacks.1.plugin", "callbacks.1"}}));
  // One key ending as the other: the longer keeps its parts, the shorter is written whole.
  EXPECT_EQ(ShortParamNames({"x.a.b", "a.b"}), (Names{{"x.a.b", "x.a.b"}, {"a.b", "a.b"}}));
  // A key named like another's slot: both stay apart.
  EXPECT_EQ(ShortParamNames({"strategies.precision.plugin", "model.precision"}),
            (Names{{"strategies.precision.plugin", "strategies.precision"},
                   {"model.precision", "model.precision"}}));
}

TEST(CellTest, ParamTextWritesTablesAndListsOnOneLine) {
  EXPECT_EQ(ParamText("24MiB"), "24MiB");
  EXPECT_EQ(ParamText(2), "2");
  EXPECT_EQ(ParamText(0.5), "0.5");
  EXPECT_EQ(ParamText(true), "true");
  EXPECT_EQ(ParamText(json::parse(R"({"plugin": "zero3", "offload": true})")),
            "zero3(offload=true)");
  EXPECT_EQ(ParamText(json::parse(R"({"plugin": "fp32"})")), "fp32");
  EXPECT_EQ(ParamText(json::parse(R"([{"plugin": "empty_cache", "every": 2},
                                      {"plugin": "grad_clip", "max_norm": 1.0}])")),
            "[empty_cache(every=2),grad_clip(max_norm=1.0)]");
  EXPECT_EQ(ParamText(json::parse(R"({"a": 1, "b": {"c": "x y"}})")), "{a=1,b={c=\"x y\"}}");
  EXPECT_EQ(ParamText(json::parse(R"(["64MiB", 3])")), "[64MiB,3]");
}

TEST(CellTest, LabelListsEveryParameterWithItsFullKey) {
  Cell cell;
  cell.params = json::parse(
      R"({"strategies.callbacks": [{"plugin": "empty_cache", "every": 2}], "optimizer.lr": 0.1})");
  EXPECT_EQ(cell.Label(), "optimizer.lr=0.1 strategies.callbacks=[empty_cache(every=2)]");
  EXPECT_EQ(cell.Describe(),
            "cell 0 (optimizer.lr=0.1 strategies.callbacks=[empty_cache(every=2)], repeat 0, seed "
            "0)");
}

// Found by the cell_file fuzz target (tools/fuzz): a float too large for an integer where the
// cell file has one was converted (undefined behaviour); it is the wrong type.
TEST(CellTest, ACellFileWithAFloatForAnIntegerIsRefused) {
  try {
    CellFromToml("[cell]\ncombination = 0\nhash = 'x'\nindex = 0\nrepeat = 0\n"
                 "seed = 1237777777777777777777777770.00\nsource = 'e.toml'\n",
                 "cell.toml");
    FAIL() << "accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cell.toml: [cell] seed is missing or has the wrong type"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace memsweep::experiment
