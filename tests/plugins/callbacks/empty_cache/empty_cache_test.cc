#include <gtest/gtest.h>

#include "core/config/config_error.h"
#include "support/run_configs.h"

namespace memsweep {
namespace {

using testing_support::TinyRun;
using testing_support::Train;

config::RunConfig WithEmptyCache(int64_t steps, const std::string& every,
                                 const std::string& allocator = "default") {
  const std::string text =
      "[experiment]\nsteps = " + std::to_string(steps) + "\n"
      "[data]\npath = \"data/devils-dictionary.jsonl\"\n"
      "[strategies.batching]\nseq_len = 32\n"
      "[strategies.allocator]\nplugin = \"" + allocator + "\"\n"
      "[[strategies.callbacks]]\nplugin = \"empty_cache\"\nevery = " + every + "\n";
  return config::ParseRunConfig(text, testing_support::SourcePath("experiments/test.toml"));
}

TEST(EmptyCacheTest, RunsEveryNStepsAndRecordsItsCost) {
  const train::RunResult r = Train(WithEmptyCache(7, "3"));
  ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
  EXPECT_EQ(r.plugin_metrics.at("empty_cache.calls"), 2.0);  // after steps 3 and 6
  EXPECT_GE(r.plugin_metrics.at("empty_cache.seconds"), 0.0);
  // The default allocator caches nothing, so nothing is released.
  EXPECT_EQ(r.plugin_metrics.at("empty_cache.released_bytes"), 0.0);
}

// Under allocator/caching freed blocks stay reserved, so empty_cache has segments to hand back
// (released bytes > 0, where the default allocator above releases none).
TEST(EmptyCacheTest, ReleasesTheCachingAllocatorsUnusedSegments) {
  const train::RunResult r = Train(WithEmptyCache(4, "1", "caching"));
  ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
  EXPECT_EQ(r.plugin_metrics.at("empty_cache.calls"), 4.0);
  EXPECT_GT(r.plugin_metrics.at("empty_cache.released_bytes"), 0.0);
}

TEST(EmptyCacheTest, RejectsEveryBelowOne) {
  EXPECT_THROW(WithEmptyCache(2, "0"), config::ConfigError);
}

}  // namespace
}  // namespace memsweep
