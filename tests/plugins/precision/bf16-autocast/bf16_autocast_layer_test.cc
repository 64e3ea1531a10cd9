// precision/bf16-autocast on a known layer: what a linear layer keeps for backward, measured by
// the tracking allocator, is exactly half as large under the plugin's autocast as in fp32.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include "core/memory/tracking_allocator.h"
#include "support/run_configs.h"

namespace memsweep {
namespace {

std::shared_ptr<Strategy> PrecisionPlugin(const std::string& name) {
  const config::RunConfig cfg = testing_support::TinyRun(1, {"strategies.precision.plugin=" + name});
  for (const auto& active : config::InstantiateStrategies(cfg)) {
    if (active.slot == "precision") return active.impl;
  }
  return nullptr;
}

struct LayerMemory {
  int64_t saved_bytes = 0;  // held after the forward, besides the layer's output
  c10::ScalarType output_dtype = at::kFloat;
};

// The layer: y = linear(a, W), its input a made inside the forward (as an activation is) from a
// batch that needs no gradient, W a parameter. W's gradient needs a, so autograd keeps a (in
// the dtype the matmul ran in); nothing else outlives the forward but the output.
LayerMemory LinearLayerForward(Strategy& precision, const at::Tensor& batch,
                               const at::Tensor& weight) {
  memory::TrackingAllocator& tracker = memory::TrackingAllocator::Instance();
  RunContext context;
  const int64_t before = tracker.AllocatedBytes();
  precision.OnStageBegin(Stage::kForward, context);
  at::Tensor y;
  {
    const at::Tensor a = batch * 2.0;
    y = at::linear(a, weight);
  }
  precision.OnStageEnd(Stage::kForward, context);
  LayerMemory memory;
  memory.saved_bytes = tracker.AllocatedBytes() - before - static_cast<int64_t>(y.nbytes());
  memory.output_dtype = y.scalar_type();
  y.sum().backward();  // the saved input really serves the weight's gradient
  EXPECT_TRUE(weight.grad().defined());
  weight.mutable_grad() = at::Tensor();
  return memory;
}

TEST(Bf16AutocastTest, HalvesTheSavedInputOfAKnownLinearLayer) {
  constexpr int64_t kRows = 64, kIn = 128, kOut = 96;
  const std::shared_ptr<Strategy> fp32 = PrecisionPlugin("fp32");
  const std::shared_ptr<Strategy> autocast = PrecisionPlugin("bf16-autocast");
  ASSERT_TRUE(fp32 && autocast);
  const at::Tensor batch = at::randn({kRows, kIn});
  const at::Tensor weight = at::randn({kOut, kIn}).requires_grad_(true);

  const LayerMemory full = LinearLayerForward(*fp32, batch, weight);
  const LayerMemory half = LinearLayerForward(*autocast, batch, weight);
  EXPECT_EQ(full.output_dtype, at::kFloat);
  EXPECT_EQ(half.output_dtype, at::kBFloat16);
  EXPECT_EQ(full.saved_bytes, kRows * kIn * 4);  // the fp32 input
  EXPECT_EQ(half.saved_bytes, kRows * kIn * 2);  // its bf16 copy; the fp32 one is freed
  EXPECT_EQ(2 * half.saved_bytes, full.saved_bytes);
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
}

}  // namespace
}  // namespace memsweep
