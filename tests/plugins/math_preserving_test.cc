// Every built-in plugin declares whether it leaves the training math unchanged, as
// loss-equivalence verification relies on (docs/results.md). A changed declaration must be a
// deliberate change of this table.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "support/run_configs.h"

namespace memsweep {
namespace {

using testing_support::TinyRun;

TEST(MathPreservingTest, BuiltInPluginsDeclareIt) {
  // slot/name -> expected MathPreserving(). fp16 cannot be created on the CPU (it rejects itself
  // when validated); its plugin.cc returns false.
  const std::map<std::string, bool> expected = {
      {"allocator/default", true},       {"allocator/caching", true},
      {"sharding/none", true},           {"precision/fp32", true},
      {"precision/bf16-autocast", false}, {"packing/none", true},
      {"batching/default", true},        {"attention/eager", true},
      {"checkpointing/none", true},      {"checkpointing/full", true},
      {"checkpointing/every_k", true},   {"checkpointing/selective", true},
      {"callbacks/empty_cache", true},   {"precision/bf16", false},
      {"attention/chunked", true},       {"attention/flash", true},
      {"packing/pack", true},            {"packing/concat", false},
      {"packing/bucketed", false},       {"sharding/ddp", true},
      {"sharding/zero1", true},          {"sharding/zero2", true},
      {"sharding/zero3", true},          {"adapter/none", true},
      {"adapter/lora", false},            {"loss/full", true},
      {"loss/chunked", true},            {"loss/fused", true},
      {"optimizer/adamw", true},         {"optimizer/torch_adamw", true},
      {"optimizer/adafactor", false},    {"optimizer/adamw_8bit", false},
      {"optimizer/adamw_32bit", true},
      {"kernels/aten", true},            {"kernels/fused", true}};
  const std::vector<std::vector<std::string>> configurations = {
      {},
      {"strategies.allocator.plugin=caching", "strategies.checkpointing.plugin=full",
       "strategies.precision.plugin=bf16-autocast",
       "strategies.callbacks=[{plugin = \"empty_cache\"}]"},
      {"strategies.checkpointing.plugin=every_k", "strategies.loss.plugin=chunked"},
      {"strategies.checkpointing.plugin=selective", "strategies.precision.plugin=bf16",
       "strategies.attention.plugin=chunked"},
      {"strategies.attention.plugin=flash", "strategies.packing.plugin=pack",
       "strategies.loss.plugin=fused"},
      {"strategies.packing.plugin=concat", "strategies.adapter.plugin=lora",
       "strategies.kernels.plugin=fused"},
      {"strategies.packing.plugin=bucketed", "strategies.sharding.plugin=ddp"},
      {"strategies.sharding.plugin=zero1", "device.world_size=2"},
      {"strategies.sharding.plugin=zero2", "device.world_size=2"},
      {"strategies.sharding.plugin=zero3", "device.world_size=2"},
      {"strategies.optimizer.plugin=torch_adamw"},
      {"strategies.optimizer.plugin=adafactor"},
      {"strategies.optimizer.plugin=adamw_8bit"},
      {"strategies.optimizer.plugin=adamw_32bit"}};
  std::map<std::string, bool> seen;
  for (const auto& overrides : configurations) {
    const config::RunConfig cfg = TinyRun(1, overrides);
    for (const auto& active : config::InstantiateStrategies(cfg)) {
      seen[active.slot + "/" + active.name] = active.impl->MathPreserving();
    }
  }
  EXPECT_EQ(seen, expected);
}

TEST(MathPreservingTest, TheRunResultRecordsFlagsAndComputeDtype) {
  const train::RunResult result =
      testing_support::Train(TinyRun(1, {"strategies.precision.plugin=bf16-autocast"}));
  ASSERT_EQ(result.status, train::RunStatus::kOk) << result.error;
  EXPECT_EQ(result.compute_dtype, "bfloat16");
  bool found = false;
  for (const auto& plugin : result.plugins) {
    if (plugin.slot != "precision") continue;
    found = true;
    EXPECT_EQ(plugin.name, "bf16-autocast");
    EXPECT_FALSE(plugin.math_preserving);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(testing_support::Train(TinyRun(1)).compute_dtype, "float32");
}

}  // namespace
}  // namespace memsweep
