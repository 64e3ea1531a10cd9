// The op-by-op AdamW update in slices (core/sdk/adamw_composite.h), what CUDA tensors take:
// slicing leaves every bit of p, m and v as one pass over the whole tensor leaves it (each element
// sees the same ops in the same order), in both layouts it slices (the flat view of contiguous
// tensors, rows of strided ones), and its temporaries stay the size of a slice, measured by the
// tracking allocator on tensors of known size.
#include "core/sdk/adamw_composite.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "core/memory/tracking_allocator.h"

namespace memsweep {
namespace {

struct State {
  at::Tensor p, g, m, v;
};

// Fresh state of n elements: contiguous double tensors (not the fused pass's fp32), or columns
// 0 of [n, 2] fp32 tensors (strided).
State MakeState(int64_t n, bool strided, int64_t seed) {
  at::manual_seed(seed);
  auto make = [&](const at::Tensor& values) {
    if (!strided) return values.to(at::kDouble);
    at::Tensor wide = at::zeros({n, 2});
    wide.select(1, 0).copy_(values);
    return wide.select(1, 0);
  };
  return {make(at::randn({n})), make(at::randn({n})), make(at::randn({n}) * 0.1),
          make(at::rand({n}) * 0.01)};
}

void ExpectBitwiseEqual(const at::Tensor& a, const at::Tensor& b, const char* what) {
  EXPECT_TRUE(at::equal(a, b)) << what << ": max |difference| "
                               << (a - b).abs().max().item<double>();
}

TEST(AdamWCompositeTest, SlicesChangeNoBitInEitherLayout) {
  const AdamWHyperparameters h{3e-3, 0.9, 0.95, 1e-8, 0.1};
  const int64_t n = 10007;  // not a multiple of the slice
  for (const bool strided : {false, true}) {
    State whole = MakeState(n, strided, 5), sliced = MakeState(n, strided, 5);
    for (int64_t step = 1; step <= 3; ++step) {
      CompositeAdamWUpdate(whole.p, whole.g, whole.m, whole.v, h, step, n);
      CompositeAdamWUpdate(sliced.p, sliced.g, sliced.m, sliced.v, h, step, 1000);
    }
    SCOPED_TRACE(strided ? "strided rows" : "contiguous flat view");
    ExpectBitwiseEqual(whole.p, sliced.p, "p");
    ExpectBitwiseEqual(whole.m, sliced.m, "exp_avg");
    ExpectBitwiseEqual(whole.v, sliced.v, "exp_avg_sq");
    EXPECT_FALSE(at::equal(whole.p, MakeState(n, strided, 5).p)) << "the update changed nothing";
  }
}

// Rows of a 2-d strided parameter are never split: each slice is a run of whole rows.
TEST(AdamWCompositeTest, StridedMatricesAreSlicedInWholeRows) {
  const AdamWHyperparameters h{1e-2, 0.9, 0.95, 1e-8, 0.0};
  auto make = [](int64_t seed) {
    at::manual_seed(seed);
    std::vector<at::Tensor> t;
    for (int i = 0; i < 4; ++i) t.push_back(at::randn({37, 50}).t());  // [50, 37], strided
    t[3] = t[3].abs() * 0.01;
    return t;
  };
  std::vector<at::Tensor> whole = make(3), sliced = make(3);
  CompositeAdamWUpdate(whole[0], whole[1], whole[2], whole[3], h, 1, 50 * 37);
  CompositeAdamWUpdate(sliced[0], sliced[1], sliced[2], sliced[3], h, 1, 100);  // 2 rows a slice
  ExpectBitwiseEqual(whole[0], sliced[0], "p");
  ExpectBitwiseEqual(whole[3], sliced[3], "exp_avg_sq");
}

// The temporaries: one pass over n fp32 elements allocates at least the n·4-byte denominator;
// slices of k elements allocate a few k·4-byte tensors at a time, never more than 4·k·4 bytes.
TEST(AdamWCompositeTest, TemporariesStayTheSizeOfASlice) {
  ASSERT_TRUE(memory::TrackingAllocator::Installed());
  memory::TrackingAllocator& tracker = memory::TrackingAllocator::Instance();
  const AdamWHyperparameters h{3e-3, 0.9, 0.95, 1e-8, 0.1};
  const int64_t n = 200000, k = 1000;
  auto peak_of_update = [&](int64_t chunk) {
    State s = MakeState(n, /*strided=*/true, 9);
    const int64_t before = tracker.AllocatedBytes();
    tracker.ResetWindowPeak();
    CompositeAdamWUpdate(s.p, s.g, s.m, s.v, h, 1, chunk);
    EXPECT_EQ(tracker.AllocatedBytes(), before) << "the update kept memory";
    return tracker.WindowPeakBytes() - before;
  };
  const int64_t whole = peak_of_update(n), sliced = peak_of_update(k);
  EXPECT_GE(whole, n * 4);
  EXPECT_GT(sliced, 0);
  EXPECT_LE(sliced, 4 * k * 4);
}

}  // namespace
}  // namespace memsweep
