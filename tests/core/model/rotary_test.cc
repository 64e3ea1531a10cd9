// The fused rotary kernel against the composite form it replaces: bitwise equal outputs and
// gradients for every dtype pair the model produces (fp32, bf16 parameters, bf16 activations
// under autocast with fp32 tables), on q laid out as the model lays it out ([B, T, H, D] storage
// viewed as [B, H, T, D]).
#include "core/model/rotary.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <string>

#include "core/estimate/meta_attention.h"
#include "core/memory/meta_tracking.h"
#include "core/memory/tracking_allocator.h"
#include "core/model/llama.h"

namespace memsweep::model {
namespace {

struct Grads {
  at::Tensor out, dx;
};

Grads Run(bool fused, const at::Tensor& x_in, const at::Tensor& cos, const at::Tensor& sin,
          const at::Tensor& grad) {
  const at::Tensor x = x_in.detach().requires_grad_(true);
  const at::Tensor out = fused ? ApplyRotary(x, cos, sin) : ApplyRotaryComposite(x, cos, sin);
  if (fused) {
    EXPECT_NE(out.grad_fn()->name().find("RotaryFunction"), std::string::npos)
        << "the fused kernel did not run: " << out.grad_fn()->name();
  }
  out.backward(grad.to(out.scalar_type()));
  return {out.detach(), x.grad()};
}

void ExpectBitwiseEqual(c10::ScalarType x_dtype, c10::ScalarType table_dtype) {
  const int64_t b = 2, t = 7, h = 3, d = 16;
  const at::Tensor storage = at::randn({b, t, h, d}).to(x_dtype);
  const at::Tensor x = storage.transpose(1, 2);  // [B, H, T, D], as the model passes q and k
  const at::Tensor positions = at::arange(t, at::kLong).unsqueeze(0).expand({b, t}) + 3;
  LlamaConfig config;  // one head of dimension d, theta 10000
  config.hidden_size = d;
  config.num_attention_heads = 1;
  config.num_key_value_heads = 1;
  auto [cos, sin] = RotaryTables(positions.contiguous(), config, table_dtype);
  const at::Tensor grad = at::randn({b, h, t, d});
  const Grads composite = Run(false, x, cos, sin, grad);
  const Grads fused = Run(true, x, cos, sin, grad);
  const std::string what = std::string(c10::toString(x_dtype)) + " x, " +
                           c10::toString(table_dtype) + " tables";
  EXPECT_EQ(fused.out.scalar_type(), composite.out.scalar_type()) << what;
  EXPECT_EQ(fused.dx.scalar_type(), x_dtype) << what;
  EXPECT_TRUE(at::equal(fused.out, composite.out)) << what;
  EXPECT_TRUE(at::equal(fused.dx, composite.dx)) << what;
}

TEST(RotaryTest, Fp32MatchesTheCompositeFormBitwise) { ExpectBitwiseEqual(at::kFloat, at::kFloat); }
TEST(RotaryTest, Bf16MatchesTheCompositeFormBitwise) {
  ExpectBitwiseEqual(at::kBFloat16, at::kBFloat16);
}
// bf16-autocast: q and k come out of bf16 matrix products, the tables are fp32.
TEST(RotaryTest, Bf16ActivationsWithFp32TablesMatchBitwise) {
  ExpectBitwiseEqual(at::kBFloat16, at::kFloat);
}
TEST(RotaryTest, Float64MatchesTheCompositeFormBitwise) {
  ExpectBitwiseEqual(at::kDouble, at::kDouble);
}

// rotate_half by hand on one row: out = x·cos + (−x2, x1)·sin.
TEST(RotaryTest, ComputesTheRotationOfOneKnownRow) {
  const at::Tensor x = at::tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({1, 1, 1, 4});
  const at::Tensor cos = at::full({1, 1, 1, 4}, 0.5f), sin = at::full({1, 1, 1, 4}, 2.0f);
  const at::Tensor expected =
      at::tensor({1 * 0.5f - 3 * 2.0f, 2 * 0.5f - 4 * 2.0f, 3 * 0.5f + 1 * 2.0f, 4 * 0.5f + 2 * 2.0f});
  EXPECT_TRUE(at::equal(ApplyRotary(x, cos, sin).view({4}), expected));
}

// What one forward and backward of the fused rotary allocates: (allocations, peak above the
// start) through the tracking allocator.
std::pair<int64_t, int64_t> AllocationsOfOneStep(const at::Tensor& storage, const at::Tensor& cos,
                                                 const at::Tensor& sin, const at::Tensor& grad) {
  memory::TrackingAllocator& tracker = memory::TrackingAllocator::Instance();
  const at::Tensor x = storage.transpose(1, 2).requires_grad_(true);
  tracker.ResetCounts();
  tracker.ResetPeak();
  const int64_t start = tracker.AllocatedBytes();
  {
    const at::Tensor out = ApplyRotary(x, cos, sin);
    out.backward(grad);
  }
  return {tracker.Counters().allocations, tracker.PeakAllocatedBytes() - start};
}

// memsweep estimate runs the model on meta tensors standing for the CPU (docs/estimate.md): the
// rotary takes the fused kernel's path there too, shapes only, so the estimate allocates what the
// CPU run allocates — not the composite form's five temporaries per call, which had moved the
// emulated caching allocator's blocks (experiments/fragmentation.toml: reserved one 2 MiB block
// off in five of seven cells).
TEST(RotaryTest, AnEstimateOnMetaTensorsAllocatesWhatTheCpuKernelAllocates) {
  memory::TrackingAllocator::Install();
  memory::InstallMetaTracking();
  estimate::SetMetaTarget(c10::DeviceType::CPU);
  const int64_t b = 2, t = 64, h = 4, d = 32;
  LlamaConfig config;
  config.hidden_size = h * d;
  config.num_attention_heads = h;
  config.num_key_value_heads = h;
  const at::Tensor positions = at::arange(t, at::kLong).unsqueeze(0).expand({b, t}).contiguous();
  for (const c10::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    auto [cos, sin] = RotaryTables(positions, config, at::kFloat);
    const at::Tensor storage = at::randn({b, t, h, d}).to(dtype);
    const at::Tensor grad = at::randn({b, h, t, d});
    const auto cpu = AllocationsOfOneStep(storage, cos, sin, grad);
    const at::Device meta(c10::DeviceType::Meta);
    const auto estimated =
        AllocationsOfOneStep(storage.to(meta), cos.to(meta), sin.to(meta), grad.to(meta));
    EXPECT_EQ(estimated, cpu) << c10::toString(dtype);
    // The composite form, for scale: what an estimate allocated before.
    memory::TrackingAllocator& tracker = memory::TrackingAllocator::Instance();
    tracker.ResetCounts();
    {
      const at::Tensor x = storage.to(meta).transpose(1, 2).requires_grad_(true);
      ApplyRotaryComposite(x, cos.to(meta), sin.to(meta)).backward(grad.to(meta));
    }
    EXPECT_GT(tracker.Counters().allocations, cpu.first + 4) << c10::toString(dtype);
  }
}

}  // namespace
}  // namespace memsweep::model
