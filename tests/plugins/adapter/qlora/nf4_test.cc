// NF4 quantisation (adapter/qlora/nf4.h) and its product (nf4_linear.h): the stored bytes as
// computed from the shape, the dequantised values within half a level's gap of the weight,
// the tiled product against the product over the dequantised weight, and the CPU product's
// peak far below a dequantised weight.
#include "adapter/qlora/nf4.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "adapter/qlora/nf4_linear.h"
#include "core/estimate/meta_attention.h"
#include "core/memory/meta_tracking.h"
#include "core/memory/storage_bytes.h"
#include "core/memory/tracking_allocator.h"

namespace memsweep::plugins::adapter {
namespace {

TEST(Nf4Test, StoredBytesAreHalfAByteAWeightPlusTheDoubleQuantisedAbsmax) {
  for (int64_t rows : {64, 1024}) {
    const at::Tensor w = at::randn({rows, 4096});
    const int64_t n = w.numel();
    const Nf4Weight q = QuantizeNf4(w);
    const int64_t blocks = n / 64, scales = (blocks + 255) / 256;
    const int64_t bytes = memory::DistinctStorageBytes(
        {q.codes, q.absmax_codes, q.absmax_scales, q.offset});
    EXPECT_EQ(bytes, n / 2 + blocks + 4 * scales + 4);
    const Nf4Weight single = QuantizeNf4(w, /*double_quant=*/false);
    EXPECT_EQ(memory::DistinctStorageBytes({single.codes, single.absmax_scales}),
              n / 2 + 4 * blocks);
    std::printf("%lld x 4096: %.5f bytes per weight (double quantised), %.5f without\n",
                static_cast<long long>(rows), static_cast<double>(bytes) / n,
                static_cast<double>(n / 2 + 4 * blocks) / n);
  }
}

TEST(Nf4Test, DequantisedValuesAreWithinHalfTheWidestLevelGapOfTheWeight) {
  torch::manual_seed(1);
  const at::Tensor w = at::randn({128, 640}) * 0.05;
  const Nf4Weight q = QuantizeNf4(w, /*double_quant=*/false);
  const at::Tensor d = DequantizeNf4(q, at::kFloat);
  // The widest gap between NF4 levels is between -1 and the next (0.304).
  const std::vector<float>& levels = Nf4Levels();
  double gap = 0;
  for (size_t i = 0; i + 1 < levels.size(); ++i) gap = std::max<double>(gap, levels[i + 1] - levels[i]);
  const at::Tensor absmax = w.view({-1, 64}).abs().amax(1, true);
  const at::Tensor err = (d.view({-1, 64}) - w.view({-1, 64})).abs() / absmax;
  EXPECT_LE(err.max().item<double>(), gap / 2 * (1 + 1e-6));
  // Dequantised values quantise to themselves: the same codes.
  EXPECT_TRUE(at::equal(QuantizeNf4(d, false).codes, q.codes));
}

TEST(Nf4Test, TheTiledProductIsTheProductOverTheDequantisedWeight) {
  torch::manual_seed(2);
  const at::Tensor w = at::randn({512, 256}) * 0.05;
  const Nf4Weight q = QuantizeNf4(w);
  const at::Tensor dense = DequantizeNf4(q, at::kFloat);
  const at::Tensor x = at::randn({3, 5, 256}).requires_grad_(true);
  const at::Tensor y_tiled = Nf4Linear(x, q, at::kFloat, /*tile_rows=*/64);
  const at::Tensor dy = at::randn({3, 5, 512});
  const at::Tensor dx_tiled = torch::autograd::grad({y_tiled}, {x}, {dy})[0];
  const at::Tensor x2 = x.detach().requires_grad_(true);
  const at::Tensor y = at::linear(x2, dense);
  const at::Tensor dx = torch::autograd::grad({y}, {x2}, {dy})[0];
  // Each output sums 256 products (forward) or 512 (input gradient) in fp32: a few units of
  // eps32 times the sum of |terms|.
  const double eps = 1.2e-7;
  EXPECT_LE((y_tiled - y).abs().max().item<double>(),
            256 * eps * at::matmul(x.detach().abs(), dense.abs().t()).max().item<double>());
  EXPECT_LE((dx_tiled - dx).abs().max().item<double>(),
            512 * eps * at::matmul(dy.abs(), dense.abs()).max().item<double>());
}

TEST(Nf4Test, TheCpuProductNeverHoldsTheWholeDequantisedWeight) {
  auto& tracker = memory::TrackingAllocator::Instance();
  const at::Tensor w = at::randn({4096, 2048}) * 0.02;
  const Nf4Weight q = QuantizeNf4(w);
  const at::Tensor x = at::randn({4, 2048}, at::kBFloat16);
  const int64_t whole = 4096 * 2048 * 2;  // the dequantised weight in bf16: 16 MiB
  tracker.ResetPeak();
  const int64_t before = tracker.AllocatedBytes();
  const at::Tensor y = Nf4Linear(x, q, at::kBFloat16);
  const int64_t peak = tracker.PeakAllocatedBytes() - before;
  std::printf("NF4 product peak %lld bytes, the whole dequantised weight %lld\n",
              static_cast<long long>(peak), static_cast<long long>(whole));
  EXPECT_LT(peak, whole / 4);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{4, 4096}));
}

Nf4Weight OnMeta(const Nf4Weight& q) {
  const at::Device meta(c10::DeviceType::Meta);
  Nf4Weight m = q;
  m.codes = q.codes.to(meta);
  if (q.absmax_codes.defined()) m.absmax_codes = q.absmax_codes.to(meta);
  m.absmax_scales = q.absmax_scales.to(meta);
  if (q.offset.defined()) m.offset = q.offset.to(meta);
  return m;
}

// memsweep estimate's meta tensors tile as the device they stand for (memsweep/compute_device.h):
// the CPU's tiles for an estimate of a CPU run — before, an estimate dequantised the whole weight
// at once, a transient of the weight's size the CPU run never holds — and every row for CUDA.
TEST(Nf4Test, AnEstimateTilesAsTheDeviceItStandsFor) {
  memory::TrackingAllocator::Install();
  memory::InstallMetaTracking();
  auto& tracker = memory::TrackingAllocator::Instance();
  const Nf4Weight q = QuantizeNf4(at::randn({4096, 2048}) * 0.02);
  const Nf4Weight meta_q = OnMeta(q);
  const at::Tensor x = at::empty({4, 2048}, at::TensorOptions().dtype(at::kBFloat16).device(at::kMeta));
  const int64_t cpu_tile = Nf4TileRows(q, at::randn({4, 2048}, at::kBFloat16), at::kBFloat16);
  ASSERT_LT(cpu_tile, 4096);
  estimate::SetMetaTarget(c10::DeviceType::CUDA);
  EXPECT_EQ(Nf4TileRows(meta_q, x, at::kBFloat16), 4096);
  estimate::SetMetaTarget(c10::DeviceType::CPU);
  EXPECT_EQ(Nf4TileRows(meta_q, x, at::kBFloat16), cpu_tile);
  tracker.ResetPeak();
  const int64_t before = tracker.AllocatedBytes();
  const at::Tensor y = Nf4Linear(x, meta_q, at::kBFloat16);
  EXPECT_LT(tracker.PeakAllocatedBytes() - before, 4096 * 2048 * 2 / 4);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{4, 4096}));
}

}  // namespace
}  // namespace memsweep::plugins::adapter
