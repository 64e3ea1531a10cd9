#include "allocator/caching/caching_backend.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/memory/tracking_allocator.h"

namespace memsweep::plugins {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Restores the device budget and clears the OOM event a test leaves behind.
class CachingBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_budget_ = Device().Budget();
    Device().ClearLastOom();
  }
  void TearDown() override {
    Device().SetBudget(saved_budget_);
    Device().ClearLastOom();
  }
  static memory::TrackingAllocator& Device() { return memory::TrackingAllocator::Instance(); }
  // A budget of `bytes` on top of what the device already holds.
  static void BudgetOnTop(size_t bytes) {
    Device().SetBudget(Device().ReservedBytes() + static_cast<int64_t>(bytes));
  }
  std::optional<int64_t> saved_budget_;
};

CachingOptions Options(int64_t max_split_mb = -1, int64_t divisions = 0, double gc = 0,
                       bool expandable = false) {
  return CachingOptions::FromParams(max_split_mb, divisions, gc, expandable);
}

TEST_F(CachingBackendTest, RoundsRequestsTo512Bytes) {
  const CachingOptions options;
  EXPECT_EQ(options.RoundSize(1), 512u);
  EXPECT_EQ(options.RoundSize(512), 512u);
  EXPECT_EQ(options.RoundSize(513), 1024u);
  EXPECT_EQ(options.RoundSize(1000000), 1000448u);
  CachingBackend backend;
  void* p = backend.Allocate(1000);
  EXPECT_EQ(backend.BlockSize(p), 1024u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 512, 0u);
  std::memset(p, 0xab, 1000);  // real memory
  EXPECT_EQ(backend.Stats().allocated_bytes, 1000);
  backend.Deallocate(p, 1000);
}

TEST_F(CachingBackendTest, SmallAndLargePoolsUseTheirSegmentSizes) {
  EXPECT_EQ(SegmentSize(512), 2 * kMiB);
  EXPECT_EQ(SegmentSize(kMiB), 2 * kMiB);
  EXPECT_EQ(SegmentSize(kMiB + 512), 20 * kMiB);
  EXPECT_EQ(SegmentSize(10 * kMiB - 512), 20 * kMiB);
  EXPECT_EQ(SegmentSize(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(SegmentSize(11 * kMiB + 512), 12 * kMiB);

  CachingBackend backend;
  const int64_t device_before = Device().ReservedBytes();
  void* small = backend.Allocate(kMiB);
  EXPECT_EQ(backend.ReservedBytes(), int64_t(2 * kMiB));
  void* huge = backend.Allocate(11 * kMiB + 1);  // its own 12 MiB segment, not split
  EXPECT_EQ(backend.ReservedBytes(), int64_t(14 * kMiB));
  void* large = backend.Allocate(kMiB + 1);
  EXPECT_EQ(backend.ReservedBytes(), int64_t(34 * kMiB));
  EXPECT_EQ(backend.Stats().segments, 3);
  EXPECT_EQ(Device().ReservedBytes() - device_before, int64_t(34 * kMiB));  // charged
  // A second small request is served from the small segment's remainder.
  void* small2 = backend.Allocate(512 * 1024);
  EXPECT_EQ(backend.Stats().segments, 3);
  EXPECT_EQ(static_cast<char*>(small2), static_cast<char*>(small) + kMiB);
  for (void* p : {small, large, huge, small2}) backend.Deallocate(p, 0);
  backend.EmptyCache();
  EXPECT_EQ(backend.ReservedBytes(), 0);
  EXPECT_EQ(Device().ReservedBytes(), device_before);
}

TEST_F(CachingBackendTest, ReusesAFreedBlockWithoutANewSegment) {
  CachingBackend backend;
  void* a = backend.Allocate(4 * kMiB);
  backend.Deallocate(a, 4 * kMiB);
  void* b = backend.Allocate(4 * kMiB);
  EXPECT_EQ(a, b);
  EXPECT_EQ(backend.Stats().segments_created, 1);
  EXPECT_EQ(backend.Stats().cache_hits, 1);
  EXPECT_EQ(backend.ReservedBytes(), int64_t(20 * kMiB));
  backend.Deallocate(b, 4 * kMiB);
}

TEST_F(CachingBackendTest, SplitsAndCoalescesBlocks) {
  CachingBackend backend;
  char* a = static_cast<char*>(backend.Allocate(6 * kMiB));
  char* b = static_cast<char*>(backend.Allocate(6 * kMiB));
  EXPECT_EQ(b, a + 6 * kMiB);  // split from the same 20 MiB segment
  EXPECT_EQ(backend.ReservedBytes(), int64_t(20 * kMiB));
  EXPECT_EQ(backend.Stats().allocated_bytes, int64_t(12 * kMiB));
  backend.Deallocate(a, 6 * kMiB);
  backend.Deallocate(b, 6 * kMiB);
  EXPECT_EQ(backend.Stats().allocated_bytes, 0);
  // The three free pieces merged back into one 20 MiB block: 19 MiB fits at the segment start.
  char* c = static_cast<char*>(backend.Allocate(19 * kMiB));
  EXPECT_EQ(c, a);
  EXPECT_EQ(backend.BlockSize(c), 20 * kMiB);  // a 1 MiB remainder is not split off (large pool)
  EXPECT_EQ(backend.Stats().segments_created, 1);
  backend.Deallocate(c, 19 * kMiB);
  backend.EmptyCache();
  EXPECT_EQ(backend.ReservedBytes(), 0);

  // Small pool: a remainder of 512 bytes or more is split off.
  char* s1 = static_cast<char*>(backend.Allocate(1000));
  char* s2 = static_cast<char*>(backend.Allocate(1000));
  EXPECT_EQ(s2, s1 + 1024);
  EXPECT_EQ(backend.ReservedBytes(), int64_t(2 * kMiB));
  backend.Deallocate(s1, 1000);
  backend.Deallocate(s2, 1000);
  char* s3 = static_cast<char*>(backend.Allocate(kMiB));  // the merged block's start again
  EXPECT_EQ(s3, s1);
  EXPECT_EQ(backend.Stats().segments, 1);
  backend.Deallocate(s3, kMiB);
}

TEST_F(CachingBackendTest, BestFitTakesTheSmallestFreeBlockThenTheLowestAddress) {
  CachingBackend backend;
  std::vector<char*> p;
  for (size_t mib : {4, 1, 3, 1, 5}) {
    p.push_back(static_cast<char*>(backend.Allocate(mib * kMiB + 1)));
  }
  // Blocks (rounded to 512) of ~4, ~1, ~3, ~1, ~5 MiB in one segment; free 4 and 3 (keep the
  // separators 1 and 1 so they do not merge).
  backend.Deallocate(p[0], 0);
  backend.Deallocate(p[2], 0);
  char* q = static_cast<char*>(backend.Allocate(2 * kMiB));
  EXPECT_EQ(q, p[2]);  // the 3 MiB hole, not the 4 MiB one
  for (char* x : {q, p[1], p[3], p[4]}) backend.Deallocate(x, 0);
}

TEST_F(CachingBackendTest, MaxSplitSizeKeepsOversizeBlocksWhole) {
  {
    CachingBackend unlimited;
    void* big = unlimited.Allocate(30 * kMiB);
    unlimited.Deallocate(big, 0);
    void* small = unlimited.Allocate(8 * kMiB);
    EXPECT_EQ(small, big);  // split from the cached 30 MiB block
    EXPECT_EQ(unlimited.Stats().segments_created, 1);
    unlimited.Deallocate(small, 0);
  }
  CachingBackend backend(Options(/*max_split_mb=*/25));
  void* big = backend.Allocate(30 * kMiB);
  backend.Deallocate(big, 0);
  void* small = backend.Allocate(8 * kMiB);  // an oversize block is not split for it
  EXPECT_NE(small, big);
  EXPECT_EQ(backend.Stats().segments_created, 2);
  EXPECT_EQ(backend.ReservedBytes(), int64_t(50 * kMiB));
  void* close = backend.Allocate(28 * kMiB);  // oversize request, cached block < request + 20 MiB
  EXPECT_EQ(close, big);
  EXPECT_EQ(backend.BlockSize(close), 30 * kMiB);  // taken whole
  void* huge = backend.Allocate(60 * kMiB);
  backend.Deallocate(huge, 0);
  void* far = backend.Allocate(26 * kMiB);  // 60 MiB >= 26 + 20 MiB: not reused
  EXPECT_NE(far, huge);
  EXPECT_EQ(backend.Stats().segments_created, 4);
  for (void* p : {small, close, far}) backend.Deallocate(p, 0);
}

TEST_F(CachingBackendTest, RoundupPower2DivisionsRoundsSizes) {
  const CachingOptions four = Options(-1, 4);
  EXPECT_EQ(four.RoundSize(1500), 1536u);                // <= 512 * 4: plain 512 rounding
  EXPECT_EQ(four.RoundSize(1 << 20), size_t{1} << 20);   // powers of two stay
  EXPECT_EQ(four.RoundSize(1300000), 1310720u);          // 1 MiB + 1/4 MiB
  EXPECT_EQ(four.RoundSize(1310721), 1572864u);          // 1 MiB + 2/4 MiB
  EXPECT_EQ(four.RoundSize(5 * kMiB + 1), 6 * kMiB);     // steps of 1 MiB between 4 and 8 MiB
  const CachingOptions one = Options(-1, 1);
  EXPECT_EQ(one.RoundSize(1300000), 2097152u);           // the next power of two
  CachingBackend backend(four);
  void* p = backend.Allocate(1300000);
  EXPECT_EQ(backend.BlockSize(p), 1310720u);
  backend.Deallocate(p, 0);
}

TEST_F(CachingBackendTest, RejectsOutOfRangeParameters) {
  EXPECT_THROW(Options(20), std::invalid_argument);
  EXPECT_THROW(Options(0), std::invalid_argument);
  EXPECT_NO_THROW(Options(21));
  EXPECT_THROW(Options(-1, 3), std::invalid_argument);
  EXPECT_THROW(Options(-1, -2), std::invalid_argument);
  EXPECT_THROW(Options(-1, 0, 1.0), std::invalid_argument);
  EXPECT_THROW(Options(-1, 0, -0.1), std::invalid_argument);
  try {
    Options(8);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("max_split_size_mb"), std::string::npos);
  }
}

TEST_F(CachingBackendTest, ExpandableSegmentGrowsInPlace) {
  CachingBackend fixed;
  CachingBackend expandable(Options(-1, 0, 0, /*expandable=*/true));
  std::vector<void*> a, b;
  for (int i = 0; i < 10; ++i) {
    a.push_back(fixed.Allocate(6 * kMiB));
    b.push_back(expandable.Allocate(6 * kMiB));
    std::memset(b.back(), 1, 6 * kMiB);  // committed, writable memory
  }
  for (int i = 1; i < 10; ++i) {
    EXPECT_EQ(static_cast<char*>(b[i]), static_cast<char*>(b[i - 1]) + 6 * kMiB);
  }
  EXPECT_EQ(expandable.Stats().segments, 1);
  EXPECT_EQ(expandable.Stats().segments_peak, 1);
  EXPECT_EQ(expandable.ReservedBytes(), int64_t(60 * kMiB));
  EXPECT_EQ(fixed.Stats().segments, 4);  // three 6 MiB blocks per 20 MiB segment
  EXPECT_EQ(fixed.ReservedBytes(), int64_t(80 * kMiB));
  for (void* p : a) fixed.Deallocate(p, 0);
  for (void* p : b) expandable.Deallocate(p, 0);
  expandable.EmptyCache();  // the free tail pages are given back
  EXPECT_EQ(expandable.ReservedBytes(), 0);
  EXPECT_EQ(expandable.Stats().segments, 0);
}

TEST_F(CachingBackendTest, ExpandableSegmentReservesLessOnAGrowingPattern) {
  // Each step frees the last tensor and asks for a slightly bigger one (sequence lengths growing).
  auto run = [](CachingBackend& backend) {
    for (size_t mib = 12; mib <= 20; mib += 2) {
      void* p = backend.Allocate(mib * kMiB);
      backend.Deallocate(p, 0);
    }
    return backend.Stats().peak_reserved_bytes;
  };
  CachingBackend fixed;
  CachingBackend expandable(Options(-1, 0, 0, true));
  const int64_t fixed_peak = run(fixed);
  const int64_t expandable_peak = run(expandable);
  EXPECT_EQ(expandable_peak, int64_t(20 * kMiB));  // the free tail grows by 2 MiB each time
  EXPECT_EQ(fixed_peak, int64_t((12 + 14 + 16 + 18 + 20) * kMiB));  // a new segment each time
  EXPECT_LT(expandable_peak, fixed_peak);
  EXPECT_EQ(expandable.Stats().segments_peak, 1);
}

TEST_F(CachingBackendTest, GarbageCollectionFreesOldestCachedSegments) {
  // Threshold 0.5 of this budget = what the device holds now + 40 MiB.
  const int64_t base = Device().ReservedBytes();
  Device().SetBudget(2 * (base + int64_t(40 * kMiB)));
  CachingBackend backend(Options(-1, 0, 0.5));
  for (size_t mib : {12, 14, 16}) backend.Deallocate(backend.Allocate(mib * kMiB), 0);
  EXPECT_EQ(backend.ReservedBytes(), int64_t(42 * kMiB));  // above the threshold, all cached
  void* p = backend.Allocate(18 * kMiB);  // no cached block fits: collect first
  EXPECT_EQ(backend.Stats().gc_runs, 1);
  EXPECT_EQ(backend.Stats().gc_released_bytes, int64_t(12 * kMiB));  // the oldest only
  EXPECT_EQ(backend.ReservedBytes(), int64_t((14 + 16 + 18) * kMiB));
  EXPECT_EQ(backend.Stats().retries, 0);
  backend.Deallocate(p, 0);

  Device().SetBudget(std::nullopt);  // the first backend's cache no longer counts against it
  CachingBackend no_gc;
  for (size_t mib : {12, 14, 16, 18}) no_gc.Deallocate(no_gc.Allocate(mib * kMiB), 0);
  EXPECT_EQ(no_gc.ReservedBytes(), int64_t(60 * kMiB));
}

TEST_F(CachingBackendTest, FreesTheCacheAndRetriesBeforeGrowingPastTheBudget) {
  BudgetOnTop(30 * kMiB);
  CachingBackend backend;
  backend.Deallocate(backend.Allocate(12 * kMiB), 0);  // 12 MiB cached
  void* p = backend.Allocate(20 * kMiB);               // 12 + 20 > 30: free the cache, retry
  EXPECT_EQ(backend.Stats().retries, 1);
  EXPECT_EQ(backend.ReservedBytes(), int64_t(20 * kMiB));
  EXPECT_FALSE(Device().LastOom().has_value());
  backend.Deallocate(p, 0);
}

TEST_F(CachingBackendTest, OomWhenReservedNotAllocatedWouldExceedTheBudget) {
  BudgetOnTop(30 * kMiB);
  CachingBackend backend;
  std::vector<void*> held;
  for (int i = 0; i < 3; ++i) held.push_back(backend.Allocate(6 * kMiB));  // 20 MiB segment
  // 18 + 12 MiB allocated would fit in 30 MiB, but a new 12 MiB segment makes 32 MiB reserved.
  EXPECT_THROW(backend.Allocate(12 * kMiB), c10::OutOfMemoryError);
  EXPECT_EQ(backend.Stats().retries, 1);
  EXPECT_EQ(backend.ReservedBytes(), int64_t(20 * kMiB));
  const auto oom = Device().LastOom();
  ASSERT_TRUE(oom.has_value());
  EXPECT_EQ(oom->requested_bytes, int64_t(12 * kMiB));
  EXPECT_NE(oom->message.find("Tried to allocate 12.00 MiB"), std::string::npos) << oom->message;
  EXPECT_NE(oom->message.find("free"), std::string::npos);
  for (void* p : held) backend.Deallocate(p, 0);
}

TEST_F(CachingBackendTest, FragmentationAtPeakComparesAllocatedWithReserved) {
  CachingBackend backend;
  void* p = backend.Allocate(5 * kMiB);  // 20 MiB segment, 5 MiB used
  EXPECT_EQ(backend.Stats().peak_reserved_bytes, int64_t(20 * kMiB));
  EXPECT_EQ(backend.Stats().allocated_at_peak_bytes, int64_t(5 * kMiB));
  EXPECT_DOUBLE_EQ(backend.Stats().FragmentationAtPeak(), 0.75);
  backend.Deallocate(p, 0);
}

// An expandable segment keeps max_split_size_mb's oversize rules, as PyTorch's get_free_block
// does, although it splits every block: a free run of 64 MiB or more inside the segment serves no
// request under 64 MiB, and an oversize request only takes one less than 20 MiB larger than
// itself; otherwise the segment grows. The large pool maps 20 MiB pages. Set-up: keep (1 MiB +
// 512 B) maps the first 20 MiB page, big (100 MiB) five more (120 MiB), pin (2 MiB) comes from
// the tail, so freeing big leaves a 100 MiB hole between two used blocks and 17 MiB - 512 B free
// at the tail.
struct HoleInExpandableSegment {
  explicit HoleInExpandableSegment(int64_t max_split_mb)
      : backend(Options(max_split_mb, 0, 0, /*expandable=*/true)) {
    keep = backend.Allocate(kMiB + 512);
    void* big = backend.Allocate(100 * kMiB);
    pin = backend.Allocate(2 * kMiB);
    backend.Deallocate(big, 100 * kMiB);
  }
  ~HoleInExpandableSegment() {
    backend.Deallocate(pin, 2 * kMiB);
    backend.Deallocate(keep, kMiB + 512);
  }
  CachingBackend backend;
  void* keep = nullptr;
  void* pin = nullptr;
};

TEST_F(CachingBackendTest, ExpandableSegmentsKeepTheOversizeRulesOfMaxSplit) {
  const auto reserved_after = [](int64_t max_split_mb, size_t request) {
    HoleInExpandableSegment segment(max_split_mb);
    EXPECT_EQ(segment.backend.ReservedBytes(), int64_t(120 * kMiB));
    void* p = segment.backend.Allocate(request);
    const int64_t reserved = segment.backend.ReservedBytes();
    segment.backend.Deallocate(p, request);
    return reserved;
  };
  // 30 MiB under max_split 64: the 100 MiB hole is refused; the tail lacks 13 MiB + 512 B: one
  // 20 MiB page. Without max_split the hole is split and reused.
  EXPECT_EQ(reserved_after(64, 30 * kMiB), int64_t(140 * kMiB));
  EXPECT_EQ(reserved_after(-1, 30 * kMiB), int64_t(120 * kMiB));
  // 70 MiB is oversize, and the hole is 20 MiB or more larger: refused, the tail lacks
  // 53 MiB + 512 B: three pages. 90 MiB takes the hole (100 < 90 + 20).
  EXPECT_EQ(reserved_after(64, 70 * kMiB), int64_t(180 * kMiB));
  EXPECT_EQ(reserved_after(64, 90 * kMiB), int64_t(120 * kMiB));
  EXPECT_EQ(reserved_after(-1, 70 * kMiB), int64_t(120 * kMiB));
}

// Releasing the cache unmaps every whole page inside a free block, not only at the segment's end:
// of the 100 MiB hole ([1 MiB + 512 B, 101 MiB + 512 B)) the pages [20, 100) MiB go; the free
// tail [103 MiB + 512 B, 120 MiB) holds no whole page and stays.
TEST_F(CachingBackendTest, ReleasingUnmapsWholePagesInsideFreeBlocksOfAnExpandableSegment) {
  HoleInExpandableSegment segment(-1);
  segment.backend.EmptyCache();
  EXPECT_EQ(segment.backend.ReservedBytes(), int64_t(40 * kMiB));
  EXPECT_EQ(segment.backend.Stats().segments_released, 1);
}

// A request no free block serves takes the lowest run of free and unmapped blocks that holds
// it, mapping only the pages it lacks: 50 MiB starts at the hole's free front (19 MiB - 512 B)
// and maps two pages of the unmapped range after it, instead of growing the segment's end.
TEST_F(CachingBackendTest, AnExpandableSegmentRemapsItsUnmappedRangesBeforeGrowing) {
  HoleInExpandableSegment segment(-1);
  segment.backend.EmptyCache();
  char* p = static_cast<char*>(segment.backend.Allocate(50 * kMiB));
  EXPECT_EQ(p, static_cast<char*>(segment.keep) + kMiB + 512);
  EXPECT_EQ(segment.backend.ReservedBytes(), int64_t(80 * kMiB));
  p[0] = 1;  // mapped memory, first and last byte
  p[50 * kMiB - 1] = 1;
  segment.backend.Deallocate(p, 50 * kMiB);
}

// Under a budget the retry unmaps the hole's inner pages, and the request then fits in them. With
// max_split_size_mb = 64 the 100 MiB hole does not serve 30 MiB (oversize), and growing the end
// by a page is over the budget; the retry unmaps [20, 100) MiB, and the run from the hole's free
// front (19 MiB - 512 B) maps one page of it: 40 + 20 MiB reserved. (Releasing only the free
// tail, as before, freed nothing here: out of memory.)
TEST_F(CachingBackendTest, TheRetryOfAnExpandableSegmentUnmapsInnerPagesAndFits) {
  HoleInExpandableSegment segment(64);
  BudgetOnTop(0);
  void* p = segment.backend.Allocate(30 * kMiB);
  EXPECT_EQ(segment.backend.Stats().retries, 1);
  EXPECT_EQ(segment.backend.ReservedBytes(), int64_t(60 * kMiB));
  EXPECT_EQ(p, static_cast<char*>(segment.keep) + kMiB + 512);
  segment.backend.Deallocate(p, 30 * kMiB);
}

// Many requests of mixed sizes, frees and releases in a random order, with and without
// max_split_size_mb: every block handed out is backed by memory (written end to end), reserved
// bytes never fall below what tensors hold, and once everything is freed a release gives every
// page back.
TEST_F(CachingBackendTest, ExpandableSegmentsStayConsistentUnderRandomRequestsAndReleases) {
  for (const int64_t max_split_mb : {int64_t{-1}, int64_t{64}}) {
    CachingBackend backend(Options(max_split_mb, 0, 0, /*expandable=*/true));
    std::mt19937 rng(7);
    std::vector<std::pair<void*, size_t>> live;
    size_t live_bytes = 0;
    for (int op = 0; op < 2000; ++op) {
      const uint32_t roll = rng() % 100;
      if (roll < 55 || live.empty()) {
        // Sizes from 512 B to 16 MiB, most of them small, as a training step's tensors are.
        const size_t size = size_t{512} << (rng() % 16) | (rng() % 4096);
        void* p = backend.Allocate(size);
        std::memset(p, 0x5a, size);
        live.emplace_back(p, size);
        live_bytes += size;
      } else if (roll < 97) {
        const size_t i = rng() % live.size();
        backend.Deallocate(live[i].first, live[i].second);
        live_bytes -= live[i].second;
        live[i] = live.back();
        live.pop_back();
      } else {
        backend.EmptyCache();
      }
      ASSERT_GE(backend.ReservedBytes(), static_cast<int64_t>(live_bytes)) << "op " << op;
      ASSERT_EQ(backend.Stats().allocated_bytes, static_cast<int64_t>(live_bytes)) << "op " << op;
    }
    for (const auto& [p, size] : live) backend.Deallocate(p, size);
    backend.EmptyCache();
    EXPECT_EQ(backend.ReservedBytes(), 0) << "max_split_size_mb " << max_split_mb;
  }
}

// The small pool's expandable segment maps 2 MiB pages, the large pool's 20 MiB pages.
TEST_F(CachingBackendTest, ExpandableSegmentsMapTwoMiBSmallAndTwentyMiBLargePages) {
  CachingBackend backend(Options(-1, 0, 0, /*expandable=*/true));
  void* small = backend.Allocate(512 * 1024);
  EXPECT_EQ(backend.ReservedBytes(), int64_t(2 * kMiB));
  void* large = backend.Allocate(11 * kMiB);
  EXPECT_EQ(backend.ReservedBytes(), int64_t(22 * kMiB));
  void* larger = backend.Allocate(10 * kMiB);  // 9 MiB free at the tail: one more page
  EXPECT_EQ(backend.ReservedBytes(), int64_t(42 * kMiB));
  for (void* p : {larger, large, small}) backend.Deallocate(p, 0);
  backend.EmptyCache();  // every page of both segments is free: all of it goes back
  EXPECT_EQ(backend.ReservedBytes(), 0);
}

}  // namespace
}  // namespace memsweep::plugins
