// End to end: training runs with allocator/caching loaded as a plugin.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/memory/tracking_allocator.h"
#include "support/run_configs.h"

namespace memsweep::plugins {
namespace {

using testing_support::TinyRun;
using testing_support::Losses;
using testing_support::Train;

TEST(CachingRunTest, LossesEqualTheDefaultAllocatorBitwise) {
  auto& tracker = memory::TrackingAllocator::Instance();
  const int64_t baseline = tracker.AllocatedBytes();
  const int64_t reserved_before = tracker.ReservedBytes();
  const train::RunResult base = Train(TinyRun(4));
  const train::RunResult cached = Train(TinyRun(4, {"strategies.allocator.plugin=\"caching\""}));
  ASSERT_EQ(base.status, train::RunStatus::kOk) << base.error;
  ASSERT_EQ(cached.status, train::RunStatus::kOk) << cached.error;
  EXPECT_EQ(cached.plugins.front().name, "caching");
  EXPECT_EQ(Losses(cached), Losses(base));  // exact
  EXPECT_GE(cached.memory.peak_reserved_bytes, cached.memory.peak_allocated_bytes);
  EXPECT_GT(cached.memory.peak_reserved_bytes, base.memory.peak_reserved_bytes);
  EXPECT_EQ(base.memory.peak_reserved_bytes, base.memory.peak_allocated_bytes);
  ASSERT_TRUE(cached.plugin_metrics.count("caching.segments_peak"));
  EXPECT_GE(cached.plugin_metrics.at("caching.segments_peak"), 2);  // small and large pools
  const double fragmentation = cached.plugin_metrics.at("caching.fragmentation_at_peak");
  EXPECT_GE(fragmentation, 0.0);
  EXPECT_LT(fragmentation, 1.0);
  EXPECT_EQ(cached.plugin_metrics.at("caching.retries"), 0);
  EXPECT_EQ(tracker.AllocatedBytes(), baseline);
  EXPECT_EQ(tracker.ReservedBytes(), reserved_before);  // the cache went back at run end
}

TEST(CachingRunTest, ExpandableSegmentsKeepOneSegmentPerPool) {
  const train::RunResult r = Train(TinyRun(3, {"strategies.allocator.plugin=\"caching\"",
                                               "strategies.allocator.expandable_segments=true"}));
  ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
  EXPECT_LE(r.plugin_metrics.at("caching.segments_peak"), 2);
  EXPECT_GE(r.memory.peak_reserved_bytes, r.memory.peak_allocated_bytes);
}

}  // namespace
}  // namespace memsweep::plugins
