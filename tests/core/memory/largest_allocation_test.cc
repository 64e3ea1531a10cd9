// The largest single allocation: the recorder keeps the largest size with its position and label;
// the tracking allocator feeds it every allocation, so a tensor of known size is recorded exactly.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "core/memory/largest_allocation.h"
#include "core/memory/tracking_allocator.h"
#include "memsweep/allocation_label.h"

namespace memsweep::memory {
namespace {

TEST(LargestAllocationTest, KeepsTheLargestWithItsPositionAndInnermostLabel) {
  LargestAllocationRecorder recorder;
  recorder.SetPosition("forward", 3, 1);
  recorder.Record(100);
  {
    AllocationLabel outer("attention scores");
    recorder.Record(50);  // smaller: ignored
    AllocationLabel inner("logits");
    recorder.SetPosition("backward", 3, 1);
    recorder.Record(200);
  }
  EXPECT_STREQ(CurrentAllocationLabel(), "");
  recorder.SetPosition("optimizer_step", 3, -1);
  recorder.Record(200);  // equal: the first one stays
  const LargestAllocation largest = recorder.Get();
  EXPECT_EQ(largest.bytes, 200);
  EXPECT_EQ(largest.stage, "backward");
  EXPECT_EQ(largest.step, 3);
  EXPECT_EQ(largest.micro_batch, 1);
  EXPECT_EQ(largest.what, "logits");
  recorder.Reset();
  EXPECT_EQ(recorder.Get().bytes, 0);
  EXPECT_EQ(recorder.Get().what, "");
}

TEST(LargestAllocationTest, TheTrackingAllocatorRecordsATensorOfKnownSizeExactly) {
  TrackingAllocator& tracker = TrackingAllocator::Install();
  tracker.Largest().Reset();
  tracker.Largest().SetPosition("forward", 0, 2);
  at::Tensor small = at::empty({1000}, at::kFloat);  // 4,000 bytes
  at::Tensor big;
  {
    AllocationLabel label("logits");
    big = at::empty({3, 5, 7001}, at::kFloat);  // 420,060 bytes
  }
  at::Tensor again = at::empty({7001}, at::kDouble);  // 56,008 bytes: smaller
  tracker.Largest().SetPosition("idle", 0, -1);
  const LargestAllocation largest = tracker.Largest().Get();
  EXPECT_EQ(largest.bytes, 3 * 5 * 7001 * 4);
  EXPECT_EQ(largest.stage, "forward");
  EXPECT_EQ(largest.micro_batch, 2);
  EXPECT_EQ(largest.what, "logits");
}

}  // namespace
}  // namespace memsweep::memory
