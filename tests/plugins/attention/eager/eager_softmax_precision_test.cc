// attention/eager with bf16 scores: the probabilities equal an fp32 softmax rounded to bf16, and
// autograd keeps only bf16 ones (the fp32 path stays as it was).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>

#include "attention/eager/eager_attention.h"
#include "core/memory/tracking_allocator.h"

namespace memsweep {
namespace {

TEST(EagerAttentionTest, Bf16SoftmaxEqualsFp32SoftmaxRoundedToBf16) {
  at::manual_seed(3);
  const int64_t t = 96;
  const at::Tensor hidden = at::ones({t, t}, at::kBool).triu(1);
  const at::Tensor scores =
      (at::randn({2, 4, t, t}) * 6.0).masked_fill(hidden, -std::numeric_limits<float>::infinity())
          .to(at::kBFloat16);
  const at::Tensor via_fp32 = at::softmax(scores, -1, at::kFloat).to(at::kBFloat16);
  EXPECT_TRUE(at::equal(at::softmax(scores, -1), via_fp32))
      << "LibTorch's bf16 softmax no longer accumulates in fp32: revisit eager_attention.cc";
}

// Bytes a forward of the attention core leaves allocated besides its output.
int64_t SavedBytes(c10::ScalarType dtype) {
  at::manual_seed(4);
  const int64_t b = 1, h = 2, t = 64, d = 16;
  const at::Tensor q = at::randn({b, h, t, d}).to(dtype).requires_grad_(true);
  const at::Tensor k = at::randn({b, h, t, d}).to(dtype).requires_grad_(true);
  const at::Tensor v = at::randn({b, h, t, d}).to(dtype).requires_grad_(true);
  auto& tracker = memory::TrackingAllocator::Instance();
  const int64_t before = tracker.AllocatedBytes();
  const at::Tensor out = plugins::EagerCausalAttention(q, k, v, {});
  const int64_t saved = tracker.AllocatedBytes() - before - static_cast<int64_t>(out.nbytes());
  out.sum().backward();
  EXPECT_TRUE(q.grad().defined() && v.grad().defined());
  return saved;
}

TEST(EagerAttentionTest, Bf16InputsKeepOnlyBf16Probabilities) {
  const int64_t scores = 1 * 2 * 64 * 64;
  const int64_t fp32 = SavedBytes(at::kFloat), bf16 = SavedBytes(at::kBFloat16);
  // fp32 keeps 4 B per score (the probabilities), bf16 2 B; the rest is the same in both.
  EXPECT_EQ(fp32 - bf16, 2 * scores) << "fp32 " << fp32 << " bf16 " << bf16;
}

}  // namespace
}  // namespace memsweep
