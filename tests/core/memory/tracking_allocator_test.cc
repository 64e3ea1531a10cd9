#include "core/memory/tracking_allocator.h"

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <string>

namespace memsweep::memory {
namespace {

TrackingAllocator& Tracker() { return TrackingAllocator::Instance(); }

TEST(TrackingAllocatorTest, IsLibTorchsCpuAllocator) {
  ASSERT_TRUE(TrackingAllocator::Installed());
  EXPECT_EQ(c10::GetCPUAllocator(), &Tracker());
}

TEST(TrackingAllocatorTest, CountsExactBytesOfKnownTensors) {
  const int64_t before = Tracker().AllocatedBytes();
  {
    at::Tensor a = at::empty({1000}, at::kFloat);          // 4000 bytes
    EXPECT_EQ(Tracker().AllocatedBytes() - before, 4000);
    at::Tensor b = at::empty({3, 7}, at::kDouble);          // 168 bytes
    at::Tensor c = at::empty({5}, at::kBFloat16);           // 10 bytes
    EXPECT_EQ(Tracker().AllocatedBytes() - before, 4000 + 168 + 10);
    at::Tensor view = a.view({10, 100});                    // shares storage: no new bytes
    EXPECT_EQ(Tracker().AllocatedBytes() - before, 4178);
  }
  EXPECT_EQ(Tracker().AllocatedBytes(), before);
}

TEST(TrackingAllocatorTest, PeakAndWindowPeakFollowTheHighestPoint) {
  Tracker().ResetPeak();
  const int64_t base = Tracker().AllocatedBytes();
  {
    at::Tensor a = at::empty({1 << 20}, at::kByte);
    at::Tensor b = at::empty({1 << 19}, at::kByte);
  }
  EXPECT_EQ(Tracker().PeakAllocatedBytes() - base, (1 << 20) + (1 << 19));
  Tracker().ResetWindowPeak();
  { at::Tensor c = at::empty({1000}, at::kByte); }
  EXPECT_EQ(Tracker().WindowPeakBytes() - base, 1000);
  EXPECT_EQ(Tracker().PeakAllocatedBytes() - base, (1 << 20) + (1 << 19));
}

TEST(TrackingAllocatorTest, CountsAllocationsAndFrees) {
  Tracker().ResetCounts();
  { at::Tensor a = at::empty({10}); at::Tensor b = at::empty({20}); }
  const MemoryCounters c = Tracker().Counters();
  EXPECT_EQ(c.allocations, 2);
  EXPECT_EQ(c.deallocations, 2);
}

TEST(TrackingAllocatorTest, RawAllocateIsTracked) {
  const int64_t before = Tracker().AllocatedBytes();
  void* p = c10::GetCPUAllocator()->raw_allocate(4096);
  EXPECT_EQ(Tracker().AllocatedBytes() - before, 4096);
  c10::GetCPUAllocator()->raw_deallocate(p);
  EXPECT_EQ(Tracker().AllocatedBytes(), before);
}

TEST(TrackingAllocatorTest, BudgetThrowsCudaLikeOutOfMemoryAndRecordsIt) {
  const int64_t base = Tracker().ReservedBytes();
  Tracker().SetBudget(base + (1 << 20));
  Tracker().SetStage("forward");
  Tracker().ClearLastOom();
  at::Tensor fits = at::empty({1 << 19}, at::kByte);
  try {
    at::Tensor too_big = at::empty({1 << 20}, at::kByte);
    FAIL() << "expected an OutOfMemoryError";
  } catch (const c10::OutOfMemoryError& e) {
    const std::string what = e.what_without_backtrace();
    EXPECT_NE(what.find("Tried to allocate 1.00 MiB"), std::string::npos) << what;
    EXPECT_NE(what.find("budget"), std::string::npos) << what;
    EXPECT_NE(what.find("512.00 KiB free"), std::string::npos) << what;
    EXPECT_NE(what.find("stage: forward"), std::string::npos) << what;
  }
  Tracker().SetBudget(std::nullopt);
  Tracker().SetStage("idle");
  const auto oom = Tracker().LastOom();
  ASSERT_TRUE(oom.has_value());
  EXPECT_EQ(oom->requested_bytes, 1 << 20);
  EXPECT_EQ(oom->stage, "forward");
  fits.reset();
  EXPECT_EQ(Tracker().ReservedBytes(), base);
}

}  // namespace
}  // namespace memsweep::memory

namespace memsweep::memory {
namespace {

long MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// The heap policy Install() sets: a 64 MiB tensor freed and allocated again reuses the same
// pages. Under glibc's default policy the block is an mmap, unmapped on free, and its 16384
// pages are faulted in (and zeroed by the kernel) again on every allocation.
TEST(TrackingAllocatorTest, FreedPagesServeTheNextAllocation) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer's allocator (with its quarantine of freed blocks) replaces "
                  "glibc's malloc: the glibc heap policy under test is not in use";
#endif
  TrackingAllocator::Install();
  constexpr int64_t kFloats = int64_t{16} << 20;  // 64 MiB
  const long pages = kFloats * 4 / sysconf(_SC_PAGESIZE);
  // The first allocations may fault pages in (and glibc may need a few rounds to coalesce).
  for (int i = 0; i < 3; ++i) at::empty({kFloats}).fill_(1.0f);
  const long before = MinorFaults();
  for (int i = 0; i < 3; ++i) at::empty({kFloats}).fill_(2.0f);
  EXPECT_LT(MinorFaults() - before, pages / 10) << "of " << pages << " pages per allocation";
}

}  // namespace
}  // namespace memsweep::memory
