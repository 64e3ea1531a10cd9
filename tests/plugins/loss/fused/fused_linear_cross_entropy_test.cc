// loss/fused against the full computation (loss/full's: the head over every token, then
// at::cross_entropy_loss with LibTorch's autograd): the same loss and gradients in fp32 for every
// chunking in both orders (token chunks, vocabulary blocks), with masked targets, a bias, a frozen
// head and an adapter's forward; gradients scaled by the incoming gradient; in bf16 within the
// bound of its rounding steps; which order "auto" takes; the default chunk (the CPU's rule and its
// bound of a quarter of the fp32 logits, CUDA's Liger rule).
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/estimate/meta_attention.h"
#include "core/memory/meta_tracking.h"
#include "core/memory/tracking_allocator.h"
#include "loss/fused/fused_linear_cross_entropy.h"
#include "memsweep/batch.h"
#include "memsweep/loss.h"
#include "support/tolerances.h"

namespace memsweep::plugins::loss {
namespace {

using testing_support::kBf16Roundoff;

constexpr int64_t kRows = 2, kTokens = 37, kHidden = 48, kVocab = 301;

struct Case {
  at::Tensor hidden;   // [B, T, H], requires grad
  at::Tensor weight;   // [V, H]
  at::Tensor bias;     // [V] or undefined
  at::Tensor targets;  // [B, T], some ignored
  double normalizer = 0;
};

Case MakeCase(bool with_bias, at::ScalarType dtype = at::kFloat, bool train_weight = true) {
  at::manual_seed(7);
  Case c;
  c.hidden = at::randn({kRows, kTokens, kHidden}).to(dtype).requires_grad_(true);
  c.weight = (at::randn({kVocab, kHidden}) * 0.3).to(dtype).requires_grad_(train_weight);
  if (with_bias) c.bias = (at::randn({kVocab}) * 0.1).to(dtype).requires_grad_(true);
  c.targets = at::randint(0, kVocab, {kRows, kTokens}, at::kLong);
  // Masked labels, a padded tail and a row's last position: no target there.
  c.targets.index_put_({0, at::indexing::Slice(0, 5)}, data::kIgnoreIndex);
  c.targets.index_put_({1, at::indexing::Slice(30, at::indexing::None)}, data::kIgnoreIndex);
  c.targets.index_put_({0, kTokens - 1}, data::kIgnoreIndex);
  c.normalizer = static_cast<double>(c.targets.ne(data::kIgnoreIndex).sum().item<int64_t>());
  return c;
}

struct Result {
  double loss = 0;
  at::Tensor grad_hidden, grad_weight, grad_bias;
};

// loss/full's computation: logits for every token, then the cross-entropy over all of them.
at::Tensor FullLoss(const model::LossInputs& in) {
  const at::Tensor logits = model::ApplyLinear(*in.head, in.hidden);
  return at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}).to(at::kFloat),
                                in.targets.reshape({-1}), {}, at::Reduction::Sum,
                                data::kIgnoreIndex) /
         in.normalizer;
}

template <typename LossFn>
Result RunLoss(const Case& c, LossFn loss_fn, double scale = 1.0, model::LinearFn forward = {}) {
  model::LinearLayer head;
  head.weight = c.weight;
  head.bias = c.bias;
  head.forward = std::move(forward);
  for (const at::Tensor* t : {&c.hidden, &c.weight, &c.bias}) {
    if (t->defined() && t->grad().defined()) t->mutable_grad() = at::Tensor();
  }
  const at::Tensor loss = loss_fn(model::LossInputs{c.hidden, &head, c.targets, c.normalizer});
  (loss * scale).backward();
  Result r;
  r.loss = loss.item<double>();
  r.grad_hidden = c.hidden.grad().clone();
  if (c.weight.requires_grad()) r.grad_weight = c.weight.grad().clone();
  if (c.bias.defined()) r.grad_bias = c.bias.grad().clone();
  return r;
}

double RelativeMax(const at::Tensor& actual, const at::Tensor& expected) {
  return (actual.to(at::kDouble) - expected.to(at::kDouble)).abs().max().item<double>() /
         expected.to(at::kDouble).abs().max().item<double>();
}

void ExpectSameInFp32(const Result& fused, const Result& full, const std::string& what) {
  EXPECT_LE(std::abs(fused.loss - full.loss) / std::abs(full.loss), 1e-6) << what;
  EXPECT_LE(RelativeMax(fused.grad_hidden, full.grad_hidden), 1e-5) << what;
  ASSERT_EQ(fused.grad_weight.defined(), full.grad_weight.defined()) << what;
  if (full.grad_weight.defined()) {
    EXPECT_LE(RelativeMax(fused.grad_weight, full.grad_weight), 1e-5) << what;
  }
  if (full.grad_bias.defined()) EXPECT_LE(RelativeMax(fused.grad_bias, full.grad_bias), 1e-5) << what;
}

TEST(FusedLinearCrossEntropyTest, EqualsTheFullLossAndGradientsInFp32ForEveryChunking) {
  for (bool with_bias : {false, true}) {
    const Case c = MakeCase(with_bias);
    const Result full = RunLoss(c, FullLoss);
    // One token per chunk, chunks that do not divide the tokens, one chunk, Liger's choice.
    // Both orders: in vocabulary blocks the same chunk_tokens gives as many blocks as chunks
    // (1 token: 74 blocks of 8 rows; 7 tokens: 11 blocks; the last block of 301 rows shorter).
    for (const FusedOrder order : {FusedOrder::kTokens, FusedOrder::kVocab}) {
      for (const int64_t chunk : std::vector<int64_t>{1, 7, 37, kRows * kTokens, 0}) {
        FusedLossOptions o;
        o.chunk_tokens = chunk;
        o.order = order;
        const Result fused = RunLoss(c, [&](const model::LossInputs& in) {
          return FusedLinearCrossEntropy(in, o);
        });
        ExpectSameInFp32(fused, full,
                         std::string(order == FusedOrder::kVocab ? "vocab" : "tokens") +
                             ", chunk_tokens " + std::to_string(chunk) + (with_bias ? ", bias" : ""));
      }
    }
  }
}

TEST(FusedLinearCrossEntropyTest, AFrozenHeadGetsNoGradientAndTheHiddenStatesStillDo) {
  const Case c = MakeCase(false, at::kFloat, /*train_weight=*/false);
  const Result full = RunLoss(c, FullLoss);
  for (const FusedOrder order : {FusedOrder::kTokens, FusedOrder::kVocab}) {
    FusedLossOptions o;
    o.chunk_tokens = 16;
    o.order = order;
    const Result fused = RunLoss(c, [&](const model::LossInputs& in) {
      return FusedLinearCrossEntropy(in, o);
    });
    EXPECT_FALSE(c.weight.grad().defined());
    ExpectSameInFp32(fused, full, order == FusedOrder::kVocab ? "frozen head, vocab" : "frozen head");
  }
}

TEST(FusedLinearCrossEntropyTest, ScalesItsStoredGradientsByTheIncomingGradient) {
  const Case c = MakeCase(true);
  const Result full = RunLoss(c, FullLoss, /*scale=*/1024.0);  // as a loss scale would
  for (const FusedOrder order : {FusedOrder::kTokens, FusedOrder::kVocab}) {
    FusedLossOptions o;
    o.chunk_tokens = 10;
    o.order = order;
    const Result fused = RunLoss(c, [&](const model::LossInputs& in) {
      return FusedLinearCrossEntropy(in, o);
    }, 1024.0);
    ExpectSameInFp32(fused, full, order == FusedOrder::kVocab ? "scaled, vocab" : "scaled by 1024");
    EXPECT_GT(fused.grad_weight.abs().max().item<double>(),
              100 * RunLoss(c, FullLoss).grad_weight.abs().max().item<double>());
  }
}

TEST(FusedLinearCrossEntropyTest, AnAdaptersForwardAndItsTensorsAreDifferentiated) {
  // A head an adapter wrapped: y = x·Wᵀ + (x·Aᵀ)·Bᵀ, A and B trainable, W frozen.
  const Case c = MakeCase(false, at::kFloat, /*train_weight=*/false);
  at::manual_seed(3);
  const at::Tensor a = (at::randn({4, kHidden}) * 0.2).requires_grad_(true);
  const at::Tensor b = (at::randn({kVocab, 4}) * 0.2).requires_grad_(true);
  const model::LinearFn forward = [a, b](const at::Tensor& x, const at::Tensor& w,
                                         const at::Tensor& bias) {
    return at::linear(x, w, bias) + at::linear(at::linear(x, a), b);
  };
  const auto grads_of = [&](const Result& r) {
    std::vector<at::Tensor> g = {r.grad_hidden, a.grad().clone(), b.grad().clone()};
    a.mutable_grad() = at::Tensor();
    b.mutable_grad() = at::Tensor();
    return g;
  };
  const Result full = RunLoss(c, FullLoss, 1.0, forward);
  const std::vector<at::Tensor> expected = grads_of(full);
  FusedLossOptions o;
  o.chunk_tokens = 9;
  const Result fused = RunLoss(c, [&](const model::LossInputs& in) {
    model::LinearLayer head = *in.head;
    head.forward_tensors = {a, b};
    return FusedLinearCrossEntropy(model::LossInputs{in.hidden, &head, in.targets, in.normalizer},
                                   o);
  }, 1.0, forward);
  const std::vector<at::Tensor> actual = grads_of(fused);
  EXPECT_LE(std::abs(fused.loss - full.loss) / full.loss, 1e-6);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_LE(RelativeMax(actual[i], expected[i]), 1e-5) << "gradient " << i;
  }
  // Vocabulary blocks need the head's own product: asked for with an adapter's head, they are
  // refused by name; "auto" takes the token chunks there.
  o.order = FusedOrder::kVocab;
  model::LinearLayer head;
  head.weight = c.weight;
  head.forward = forward;
  head.forward_tensors = {a, b};
  try {
    FusedLinearCrossEntropy(model::LossInputs{c.hidden, &head, c.targets, c.normalizer}, o);
    ADD_FAILURE() << "order = vocab with an adapter's head was not refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("order = \"tokens\""), std::string::npos) << e.what();
  }
  EXPECT_EQ(PickOrder(FusedLossOptions{}, true, /*adapted_head=*/true, at::kBFloat16),
            FusedOrder::kTokens);
}

// bf16 with fp32 accumulation, against fp32 arithmetic on the same bf16 values, element by
// element of the weight's gradient. The rounding steps: the logits z are rounded to bf16
// (≤ u·max|z| each), which moves the softmax p by ≤ 2u·max|z|·p; the logits' gradient
// g = (p − one-hot)/N is rounded to bf16 (≤ u·|g|); each chunk's product P_c = g_cᵀ·h_c is
// rounded once (≤ u·|P_c|); the fp32 sum over chunks is rounded once to bf16 (≤ u·|sum|). With
// S = (|g| + one-hot/N)ᵀ·|h| (which bounds (p/N)ᵀ·|h| and |g|ᵀ·|h|):
//   |fused − exact| ≤ u·(|exact| + Σ_c |P_c| + (1 + 2·max|z|)·S) + fp32 terms (far smaller).
// accumulation = "weight" (a bf16 sum, rounded at every chunk) is printed beside it.
TEST(FusedLinearCrossEntropyTest, Bf16WeightGradientIsWithinItsRoundingBoundWithFp32Accumulation) {
  const Case c = MakeCase(false, at::kBFloat16);
  const int64_t chunk = 4;  // 19 chunks
  const at::Tensor h = c.hidden.detach().reshape({-1, kHidden}).to(at::kFloat);
  const at::Tensor w = c.weight.detach().to(at::kFloat);
  const at::Tensor t = c.targets.reshape({-1});
  const at::Tensor valid = t.ne(data::kIgnoreIndex).to(at::kFloat).unsqueeze(1);
  const at::Tensor z = at::mm(h, w.t());
  at::Tensor one_hot = at::zeros_like(z);
  one_hot.scatter_(1, t.clamp_min(0).unsqueeze(1), 1.0);
  one_hot = one_hot * valid / c.normalizer;
  const at::Tensor g = at::softmax(z, 1) * valid / c.normalizer - one_hot;
  const at::Tensor exact = at::mm(g.t(), h);
  at::Tensor chunk_sum = at::zeros_like(exact);
  for (int64_t begin = 0; begin < h.size(0); begin += chunk) {
    const int64_t end = std::min(h.size(0), begin + chunk);
    chunk_sum += at::mm(g.slice(0, begin, end).t(), h.slice(0, begin, end)).abs();
  }
  const double max_z = z.abs().max().item<double>();
  const at::Tensor s = at::mm((g.abs() + one_hot).t(), h.abs());
  const at::Tensor bound = kBf16Roundoff * (exact.abs() + chunk_sum + (1 + 2 * max_z) * s) +
                           1e-6 * exact.abs().max();
  // In vocabulary blocks each row's product runs over all tokens at once, rounded once (≤ u·|P|,
  // and |P| ≤ Σ_c |P_c|): the same bound holds.
  for (const FusedOrder order : {FusedOrder::kTokens, FusedOrder::kVocab}) {
    for (const char* accumulation : {"fp32", "weight"}) {
      FusedLossOptions o;
      o.chunk_tokens = chunk;
      o.order = order;
      o.fp32_accumulation = std::string(accumulation) == "fp32";
      const Result fused = RunLoss(c, [&](const model::LossInputs& in) {
        return FusedLinearCrossEntropy(in, o);
      });
      const at::Tensor error = (fused.grad_weight.to(at::kFloat) - exact).abs();
      const int64_t outside = error.gt(bound).sum().item<int64_t>();
      std::printf("%s, accumulation %s: largest error %.3g, largest error / bound %.3g, %lld of "
                  "%lld elements outside\n",
                  order == FusedOrder::kVocab ? "vocab blocks" : "token chunks", accumulation,
                  error.max().item<double>(), (error / bound).max().item<double>(),
                  static_cast<long long>(outside), static_cast<long long>(error.numel()));
      if (o.fp32_accumulation) EXPECT_EQ(outside, 0);
    }
  }
}

// An estimate (meta tensors, docs/estimate.md) takes the path of the device it stands for: for the
// CPU, the fp32 sum of the hidden states' gradient takes each block's operands upcast (two fp32
// copies per block); for CUDA, a GEMM with an fp32 output adds into the sum and allocates nothing —
// the estimate of a CUDA run had counted the CPU's copies.
TEST(FusedLinearCrossEntropyTest, AnEstimateOfACudaRunTakesNoUpcastCopiesForTheFp32Sum) {
  memory::TrackingAllocator::Install();
  memory::InstallMetaTracking();
  auto& tracker = memory::TrackingAllocator::Instance();
  const at::TensorOptions meta = at::TensorOptions().device(at::kMeta).dtype(at::kBFloat16);
  const at::Tensor hidden = at::empty({kRows, kTokens, kHidden}, meta).requires_grad_(true);
  model::LinearLayer head;
  head.weight = at::empty({kVocab, kHidden}, meta).requires_grad_(true);
  const at::Tensor targets = at::zeros({kRows, kTokens}, meta.dtype(at::kLong));
  FusedLossOptions o;
  o.chunk_tokens = 8;
  o.order = FusedOrder::kVocab;
  const int64_t block = VocabBlockRows(kRows * kTokens, kVocab, o.chunk_tokens);
  const int64_t blocks = (kVocab + block - 1) / block;
  int64_t allocations[2] = {0, 0};
  for (const c10::DeviceType target : {c10::DeviceType::CPU, c10::DeviceType::CUDA}) {
    estimate::SetMetaTarget(target);
    tracker.ResetCounts();
    FusedLinearCrossEntropy(model::LossInputs{hidden, &head, targets, 10.0}, o);
    allocations[target == c10::DeviceType::CUDA] = tracker.Counters().allocations;
  }
  estimate::SetMetaTarget(c10::DeviceType::CPU);
  EXPECT_EQ(allocations[0] - allocations[1], 2 * blocks);
}

TEST(FusedLinearCrossEntropyTest, AutoCutsTheVocabularyOnlyWhereItSavesTheHeadSizedFp32Sum) {
  const FusedLossOptions defaults;
  EXPECT_EQ(defaults.order, FusedOrder::kAuto);
  EXPECT_EQ(PickOrder(defaults, true, false, at::kBFloat16), FusedOrder::kVocab);
  EXPECT_EQ(PickOrder(defaults, true, false, at::kHalf), FusedOrder::kVocab);
  EXPECT_EQ(PickOrder(defaults, true, false, at::kFloat), FusedOrder::kTokens);   // no wider sum
  EXPECT_EQ(PickOrder(defaults, false, false, at::kBFloat16), FusedOrder::kTokens);  // frozen head
  FusedLossOptions bf16_sum;
  bf16_sum.fp32_accumulation = false;
  EXPECT_EQ(PickOrder(bf16_sum, true, false, at::kBFloat16), FusedOrder::kTokens);
  FusedLossOptions no_upcast;
  no_upcast.upcast = false;
  EXPECT_EQ(PickOrder(no_upcast, true, false, at::kBFloat16), FusedOrder::kTokens);
  FusedLossOptions asked;
  asked.order = FusedOrder::kVocab;
  EXPECT_EQ(PickOrder(asked, false, false, at::kFloat), FusedOrder::kVocab);
}

TEST(FusedLinearCrossEntropyTest, VocabularyBlocksAreAsManyAsLigersChunks) {
  // 4,096 tokens in chunks of 128: 32 pieces; ⌈128256 / 32⌉ = 4,008 rows (a multiple of 8).
  EXPECT_EQ(VocabBlockRows(4096, 128256, 128), 4008);
  EXPECT_EQ(VocabBlockRows(8192, 128256, 256), 4008);
  EXPECT_EQ(VocabBlockRows(74, 301, 7), 32);     // 11 pieces: ⌈301 / 11⌉ = 28, up to 32
  EXPECT_EQ(VocabBlockRows(74, 301, 1), 8);      // at least 8 rows
  EXPECT_EQ(VocabBlockRows(10, 301, 64), 301);   // one piece: the whole head
  EXPECT_EQ(VocabBlockRows(0, 301, 64), 301);
}

TEST(FusedLinearCrossEntropyTest, LigerChunkSizeFollowsVocabularyAndHiddenSize) {
  // Llama-3.2-1B's head (vocab 128,256, hidden 2,048) over 4,096 tokens: ⌈128256 / 2048⌉ = 63,
  // ⌈4096 / 63⌉ = 66, next power of two 128.
  EXPECT_EQ(LigerChunkTokens(4096, 128256, 2048), 128);
  EXPECT_EQ(LigerChunkTokens(8192, 128256, 2048), 256);
  EXPECT_EQ(LigerChunkTokens(1, 128256, 2048), 1);
  EXPECT_EQ(LigerChunkTokens(100, 64, 128), 128);  // vocab below hidden: one chunk
}

// The default chunk on the CPU: long enough for the CPU's GEMM, within a quarter of the fp32
// logits. Liger's rule (kept on CUDA) gave 4-token chunks for Qwen2.5-0.5B's head over 2 x 256
// tokens: 128 passes over the head, 0.18x loss/full's training step (docs/loss.md).
TEST(FusedLinearCrossEntropyTest, TheCpusDefaultChunkIsAsLongAsAQuarterOfTheLogitsAllows) {
  using c10::DeviceType;
  // Qwen2.5-0.5B (vocab 151,936, hidden 896), 512 tokens: a quarter of the logits holds
  // ⌊512·151936 / (4·151936 + 4·896 + 64)⌋ = 127 tokens' worth → 5 pieces of ⌈512 / 5⌉ = 103,
  // rounded up to a multiple of 16 within the 127: 112 (4 × 112 + 64).
  EXPECT_EQ(ChunkBytesPerToken(151936, 896, at::kFloat), 4 * 151936 + 4 * 896 + 64);
  EXPECT_EQ(DefaultChunkTokens(512, 151936, 896, DeviceType::CPU, at::kFloat), 112);
  EXPECT_EQ(DefaultChunkTokens(512, 151936, 896, DeviceType::CUDA, at::kFloat), 4);  // Liger's
  EXPECT_EQ(DefaultChunkTokens(512, 151936, 896, DeviceType::CUDA, at::kFloat),
            LigerChunkTokens(512, 151936, 896));
  // Long batches: kCpuGemmChunkTokens-token chunks, well within the quarter.
  EXPECT_EQ(DefaultChunkTokens(16384, 128256, 2048, DeviceType::CPU, at::kFloat), kCpuGemmChunkTokens);
  // Longer still, Liger's chunk when it is longer than kCpuGemmChunkTokens.
  EXPECT_EQ(DefaultChunkTokens(1 << 17, 128256, 2048, DeviceType::CPU, at::kFloat),
            LigerChunkTokens(1 << 17, 128256, 2048));
  // A 16-bit compute dtype holds 6 bytes a logit (the fp32 copy beside it): shorter chunks.
  EXPECT_EQ(ChunkBytesPerToken(151936, 896, at::kBFloat16), 6 * 151936 + 6 * 896 + 64);
  EXPECT_LT(DefaultChunkTokens(512, 151936, 896, DeviceType::CPU, at::kBFloat16), 103);
  EXPECT_EQ(DefaultChunkTokens(1, 151936, 896, DeviceType::CPU, at::kFloat), 1);
  EXPECT_EQ(DefaultChunkTokens(0, 151936, 896, DeviceType::CPU, at::kFloat), 1);
  // Every bundled shape (presets and experiments/models: hidden, vocab), short and long batches,
  // both dtypes: no chunk holds more than a quarter of the fp32 logits (unless a single token
  // does: a vocabulary small against the hidden size), none exceeds the tokens, and the chunks are
  // even (the last one less than 16 tokens a piece shorter than the others).
  const std::pair<int64_t, int64_t> shapes[] = {{64, 512},     {512, 8192},   {896, 151936},
                                                {2048, 128256}, {3072, 200064}, {3584, 152064},
                                                {4096, 32000},  {64, 32768},   {512, 32768}};
  for (const auto& [hidden, vocab] : shapes) {
    for (const int64_t tokens : {7, 256, 512, 2048, 4096, 8192, 65536}) {
      for (const c10::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
        const int64_t chunk = DefaultChunkTokens(tokens, vocab, hidden, DeviceType::CPU, dtype);
        const std::string what = std::to_string(tokens) + " tokens, hidden " +
                                 std::to_string(hidden) + ", vocab " + std::to_string(vocab);
        EXPECT_GE(chunk, 1) << what;
        EXPECT_LE(chunk, tokens) << what;
        if (chunk > 1) {
          EXPECT_LE(chunk * ChunkBytesPerToken(vocab, hidden, dtype), tokens * vocab) << what;
        }
        const int64_t pieces = (tokens + chunk - 1) / chunk;
        EXPECT_GT(tokens - (pieces - 1) * chunk, chunk - 16 * pieces) << what;
      }
    }
  }
}

// What a chunk holds, measured: the fused loss at its default chunk on the CPU, fp32, from the
// hidden states to their gradient and the head's, holds at most a quarter of the fp32 logits
// beyond its inputs and those two gradients (in-place log-sum-exp: at::logsumexp's temporary
// would double a chunk's bytes).
TEST(FusedLinearCrossEntropyTest, TheDefaultChunkHoldsAtMostAQuarterOfTheFp32Logits) {
  memory::TrackingAllocator::Install();
  auto& tracker = memory::TrackingAllocator::Instance();
  constexpr int64_t kN = 2 * 128, kH = 64, kV = 4096;
  at::manual_seed(3);
  const at::Tensor hidden = at::randn({kN, kH}).requires_grad_(true);
  model::LinearLayer head;
  head.weight = (at::randn({kV, kH}) * 0.1).requires_grad_(true);
  const at::Tensor targets = at::randint(0, kV, {kN}, at::kLong);
  const int64_t chunk = DefaultChunkTokens(kN, kV, kH, c10::DeviceType::CPU, at::kFloat);
  EXPECT_LT(chunk, kN);  // more than one piece: a chunk's bytes are what is measured
  tracker.ResetPeak();
  const int64_t before = tracker.AllocatedBytes();
  {
    const at::Tensor loss =
        FusedLinearCrossEntropy(model::LossInputs{hidden, &head, targets, double{kN}}, {});
    const int64_t beyond = tracker.PeakAllocatedBytes() - before - 4 * kN * kH - 4 * kV * kH;
    std::printf("chunk %lld tokens of %lld: %lld bytes beyond the gradients, %.1f%% of the fp32 "
                "logits\n",
                static_cast<long long>(chunk), static_cast<long long>(kN),
                static_cast<long long>(beyond), 100.0 * static_cast<double>(beyond) / (4.0 * kN * kV));
    EXPECT_LE(beyond, kN * kV);  // a quarter of 4·N·V bytes
    EXPECT_GT(beyond, chunk * kV * 4 * 9 / 10);  // and it is the chunk that holds it
    loss.backward();
  }
  EXPECT_TRUE(hidden.grad().defined());
}

}  // namespace
}  // namespace memsweep::plugins::loss
