#include "attention/flash/flash_attention.h"

#include <ATen/ATen.h>
#include <ATen/Version.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attention/eager/eager_attention.h"
#include "attention/flash/flash_tile_ops.h"
#include "attention/flash/flash_varlen.h"
#include "core/memory/tracking_allocator.h"
#include "core/model/llama.h"
#include "plugins/attention/attention_test_support.h"
#include "support/run_configs.h"

namespace memsweep::plugins::flash {
namespace {

using testing_support::AttentionCase;

// Tile sizes that put several tiles (and partial ones) into the sweep's short sequences, and
// the automatic L2-sized default.
const std::vector<TileSizes> kTileChoices = {{16, 16}, {16, 32}, {32, 16}, {0, 0}};

class FlashSweepTest : public ::testing::TestWithParam<c10::ScalarType> {};

TEST_P(FlashSweepTest, OutputAndGradientsMatchAFloat64Reference) {
  testing_support::AttentionRatios worst;
  for (const AttentionCase& c : testing_support::SweepCases()) {
    for (const TileSizes& tiles : kTileChoices) {
      SCOPED_TRACE("q_tile=" + std::to_string(tiles.q_tile) +
                   " k_tile=" + std::to_string(tiles.k_tile));
      worst.Fold(testing_support::ExpectMatchesReference(MakeFlashAttention(tiles), c, GetParam(),
                                                         {.online_softmax = true}));
    }
  }
  std::printf("%s\n", worst.Describe().c_str());
}

// Every instruction set this CPU runs (AVX-512, AVX2, baseline: each its own register blocking)
// against the same reference, on the shapes with partial tiles and packed rows.
TEST_P(FlashSweepTest, EveryInstructionSetMatchesTheReference) {
  for (Isa isa : SupportedIsas()) {
    SCOPED_TRACE(std::string("isa=") + IsaName(isa));
    for (const AttentionCase& c : testing_support::SweepCases()) {
      testing_support::ExpectMatchesReference(MakeFlashAttention({16, 32}, isa), c, GetParam());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FlashSweepTest, ::testing::Values(at::kFloat, at::kBFloat16),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

TEST(FlashAttentionTest, TwoThreadsGiveTheSameResultAsOne) {
  const AttentionCase c{2, 4, 2, 40, 16, true, 11};
  const auto p = testing_support::MakeProblem(c, at::kFloat);
  const int before = at::get_num_threads();
  at::set_num_threads(1);
  const auto one = testing_support::RunAttention(MakeFlashAttention({16, 16}), p, at::kFloat);
  at::set_num_threads(2);
  const auto two = testing_support::RunAttention(MakeFlashAttention({16, 16}), p, at::kFloat);
  at::set_num_threads(before);
  EXPECT_TRUE(at::equal(one.out, two.out));
  EXPECT_TRUE(at::equal(one.dk, two.dk));
  EXPECT_TRUE(at::equal(one.dv, two.dv));
  // dq: the same fp32 terms dS_ij·K_j/√d summed in another order (per-thread partial copies):
  // each order is within γ_T·Σ_j|dS_ij||K_j|/√d of the exact sum, so the two within twice that;
  // twice again for the computed |dS| against the exact one (first order: ρ ≪ 1 in fp32).
  const at::Tensor terms = testing_support::ErrorBounds(p, at::kFloat).dq_terms;
  const at::Tensor bound = 4 * testing_support::Gamma(c.seq_len, testing_support::kFp32Roundoff) * terms;
  testing_support::ExpectWithin(two.dq, one.dq, bound, "dq");
}

TEST(FlashAttentionTest, MixedDtypesArePromotedLikeEager) {
  const at::Tensor q = at::randn({1, 2, 9, 16}), k = at::randn({1, 2, 9, 16});
  const at::Tensor v = at::randn({1, 2, 9, 16}).to(at::kBFloat16);
  const at::Tensor out = MakeFlashAttention({})(q, k, v, {});
  EXPECT_EQ(out.scalar_type(), at::kFloat);
  // Two fp32 computations of the same attention: each within its bound of exact arithmetic
  // (the online softmax's bound is the larger), the two within the sum.
  const testing_support::AttentionProblem p{q.to(at::kDouble), k.to(at::kDouble),
                                            v.to(at::kDouble), at::zeros_like(q, at::kDouble), {}};
  const at::Tensor bound = testing_support::ErrorBounds(p, at::kFloat, {.online_softmax = true}).out +
                           testing_support::ErrorBounds(p, at::kFloat).out;
  testing_support::ExpectWithin(out, EagerCausalAttention(q, k, v.to(at::kFloat), {}), bound,
                                "output");
}

TEST(FlashAttentionTest, KeepsOnlyOutputAndLogSumExpBeyondItsInputs) {
  // Eager would keep T² scores per head (1 MiB here); flash keeps O(T·D) per head.
  const int64_t t = 512, d = 16;
  auto& tracker = memory::TrackingAllocator::Instance();
  const at::Tensor q = at::randn({1, 1, t, d}).requires_grad_(true);
  const at::Tensor k = at::randn({1, 1, t, d}).requires_grad_(true);
  const at::Tensor v = at::randn({1, 1, t, d}).requires_grad_(true);
  const int64_t before = tracker.AllocatedBytes();
  tracker.ResetWindowPeak();
  at::Tensor out = FlashAttentionVarlen(q, k, v, {}, {});
  const int64_t kept = tracker.AllocatedBytes() - before;
  const int64_t out_bytes = t * d * 4, lse_bytes = t * 4, offsets_bytes = 2 * 8;
  EXPECT_LE(kept, out_bytes + lse_bytes + offsets_bytes + 512) << "kept " << kept << " bytes";
  // Transient: the threads' tile buffers.
  const int64_t scratch = at::get_num_threads() *
                          BackwardScratchBytes(ResolveTileSizes({}, d), d);
  EXPECT_LE(tracker.WindowPeakBytes() - before, kept + scratch);
  out.sum().backward();
  EXPECT_TRUE(q.grad().defined() && k.grad().defined() && v.grad().defined());
}

TEST(FlashTileOpsTest, VectorisedExpMatchesStdExp) {
  std::vector<float> x;
  for (float v = -90.0f; v <= 80.0f; v += 0.37f) x.push_back(v);
  x.push_back(-std::numeric_limits<float>::infinity());
  while (x.size() % kLanes != 0) x.push_back(0.0f);
  // Cephes' scheme in fp32 roundings (u = 2^-24), relative to the result: the reduced argument
  // r = x − n·C1 + n·C2 (ln2 split so that n·C1 and x − n·C1 are exact) carries the roundings of
  // n·C2 (|n·C2| ≤ 0.03) and of the sum (|r| ≤ ln2/2): ≤ 0.4u absolute, moving e^r by ≤ 0.4u;
  // the Horner steps leave p ≈ 1/2 within 2u (the last step's two roundings, earlier ones damped
  // by |r| ≤ 0.35), which reaches the result through p·r² ≤ 0.1·e^r: 0.2u; r·r, p·r², + r and
  // + 1: ≤ 0.1u + 0.1u + 0.6u + 1u; the polynomial's approximation error ≤ 1u; 2^n is exact.
  // In all ≤ 3.4u, within 4u = ExpError(u)/2, with or without fused multiply-adds — on every
  // instruction set this CPU runs.
  const double bound = testing_support::ExpError(testing_support::kFp32Roundoff) / 2;
  double worst = 0;
  for (Isa isa : SupportedIsas()) {
    std::vector<float> y = x;
    TileOpsFor(isa).exp_in_place(y.data(), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const double expected = x[i] < -87.3 ? 0.0 : std::exp(static_cast<double>(x[i]));
      EXPECT_LE(std::abs(y[i] - expected), bound * expected) << IsaName(isa) << " x = " << x[i];
      if (expected > 0) worst = std::max(worst, std::abs(y[i] - expected) / expected);
    }
  }
  std::printf("largest relative error %.3g = %.2f u\n", worst,
              worst / testing_support::kFp32Roundoff);
}

// Every row-block remainder (m up to 13 covers 6-, 4-, 2- and 1-row blocks) and column count
// (one to five vectors) on every instruction set this CPU runs, against the product in float64:
// the 7 products and c0 summed in fp32 are within γ_8·(|c0| + |a||b|) of exact (γ_7·|a||b|
// without c0), whatever the order.
TEST(FlashTileOpsTest, GemmsMatchAFloat64Product) {
  constexpr int64_t kDepth = 7;
  const double u = testing_support::kFp32Roundoff;
  for (Isa isa : SupportedIsas()) {
    const TileOps& ops = TileOpsFor(isa);
    for (int64_t m = 1; m <= 13; ++m) {
      for (int64_t n : {16, 32, 48, 64, 80}) {
        const std::string what = std::string(IsaName(isa)) + " " + std::to_string(m) + "x" +
                                 std::to_string(n);
        const at::Tensor a = at::randn({m, kDepth}), b = at::randn({kDepth, n});
        const at::Tensor c0 = at::randn({m, n});
        const at::Tensor a64 = a.to(at::kDouble), b64 = b.to(at::kDouble);
        const at::Tensor c064 = c0.to(at::kDouble);
        const at::Tensor abs_products = at::mm(a64.abs(), b64.abs());
        at::Tensor c = c0.clone();
        ops.gemm_nn(m, n, kDepth, a.data_ptr<float>(), kDepth, b.data_ptr<float>(), n,
                    c.data_ptr<float>(), n, /*accumulate=*/true);
        testing_support::ExpectWithin(c, c064 + at::mm(a64, b64),
                                      testing_support::Gamma(kDepth + 1, u) *
                                          (c064.abs() + abs_products),
                                      "NN " + what);
        const at::Tensor a_t = a.t().contiguous();  // [kDepth, m]
        ops.gemm_tn(m, n, kDepth, a_t.data_ptr<float>(), m, b.data_ptr<float>(), n,
                    c.data_ptr<float>(), n, /*accumulate=*/false);
        testing_support::ExpectWithin(c, at::mm(a64, b64),
                                      testing_support::Gamma(kDepth, u) * abs_products,
                                      "TN " + what);
      }
    }
  }
}

TEST(FlashTileOpsTest, AutoFollowsTheCpuAndLibTorchsLevel) {
  const Isa best = BestIsa();
  EXPECT_TRUE(CpuSupports(best));
  EXPECT_EQ(TileOpsFor(Isa::kAuto).isa, best);
  const std::string aten = at::get_cpu_capability();
  if (aten == "DEFAULT") EXPECT_EQ(best, Isa::kBaseline);
  if (aten == "AVX2") EXPECT_NE(best, Isa::kAvx512);
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kBaseline}) {
    if (CpuSupports(isa)) continue;
    EXPECT_THROW(TileOpsFor(isa), std::invalid_argument) << IsaName(isa);
  }
  for (Isa isa : {Isa::kAuto, Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    EXPECT_EQ(ParseIsa(IsaName(isa)), isa);
  }
  EXPECT_FALSE(ParseIsa("sse4").has_value());
}

TEST(FlashVarlenTest, SegmentIdsBecomeCumulativeOffsets) {
  const at::Tensor ids = at::tensor(std::vector<int64_t>{0, 0, 0, 1, 2, 2, 7, 7, 7, 7}).view({2, 5});
  const at::Tensor cu = CuSeqlensFromSegmentIds(ids);
  EXPECT_TRUE(at::equal(cu, at::tensor(std::vector<int64_t>{0, 3, 4, 5, 6, 10})));
  const auto seqs = SequencesFromCuSeqlens(cu, 2, 5);
  ASSERT_EQ(seqs.size(), 5u);
  EXPECT_EQ(seqs[3].batch, 1);
  EXPECT_EQ(seqs[3].start, 0);
  EXPECT_EQ(seqs[3].length, 1);
  EXPECT_EQ(seqs[4].length, 4);
}

TEST(FlashVarlenTest, RejectsADocumentSplitInTwoRuns) {
  const at::Tensor ids = at::tensor(std::vector<int64_t>{0, 0, 1, 0}).view({1, 4});
  try {
    CuSeqlensFromSegmentIds(ids);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("segment id 0 occurs in two separate runs"),
              std::string::npos) << e.what();
  }
}

TEST(FlashVarlenTest, RejectsOffsetsCrossingARow) {
  EXPECT_THROW(SequencesFromCuSeqlens(at::tensor(std::vector<int64_t>{0, 3, 8}), 2, 4),
               std::invalid_argument);
  EXPECT_THROW(SequencesFromCuSeqlens(at::tensor(std::vector<int64_t>{0, 4, 7}), 2, 4),
               std::invalid_argument);
}

TEST(FlashTileSizesTest, AutomaticTilesFitHalfTheL2) {
  for (int64_t d : {16, 64, 128}) {
    const TileSizes tiles = ResolveTileSizes({}, d);
    EXPECT_GE(tiles.q_tile, 16);
    EXPECT_GE(tiles.k_tile, 16);
    if (tiles.q_tile > 16 || tiles.k_tile > 16) {
      EXPECT_LE(BackwardScratchBytes(tiles, d), L2CacheBytes() / 2) << "d = " << d;
    }
  }
  const TileSizes fixed = ResolveTileSizes({48, 24}, 64);
  EXPECT_EQ(fixed.q_tile, 48);
  EXPECT_EQ(fixed.k_tile, 24);
}

// The model on packed rows: flash (varlen from segment ids) against eager's per-document mask.
TEST(FlashAttentionTest, PackedModelForwardAndBackwardMatchEager) {
  const at::Tensor segments = testing_support::RandomSegmentIds(2, 40, 3);
  const at::Tensor positions =
      at::arange(40, at::kLong).unsqueeze(0).expand({2, 40}).contiguous();
  const at::Tensor ids = at::randint(0, 259, {2, 40}, at::kLong);
  auto run = [&](model::AttentionFn attention) {
    torch::manual_seed(5);
    model::LlamaModel m(*model::LlamaPreset("tiny"));
    m->SetAttention(std::move(attention));
    const at::Tensor logits = m->forward(ids, positions, segments);
    logits.square().mean().backward();
    std::vector<at::Tensor> out = {logits.detach()};
    for (const auto& p : m->parameters()) out.push_back(p.grad().clone());
    return out;
  };
  const auto eager = run(EagerCausalAttention);
  const auto flash = run(MakeFlashAttention({16, 16}));
  ASSERT_EQ(eager.size(), flash.size());
  // The same fp32 model computed with two attention kernels: each within γ̃_n(λ) of exact
  // arithmetic relative to each tensor's scale (support/tolerances.h), n the rounding path:
  // the forward's for the logits, a whole step's for the gradients (80 tokens of 40).
  const model::LlamaConfig config = *model::LlamaPreset("tiny");
  const double u = testing_support::kFp32Roundoff;
  for (size_t i = 0; i < eager.size(); ++i) {
    const int64_t path = i == 0 ? testing_support::LlamaForwardPathTerms(config, 40, 80)
                                : testing_support::LlamaStepPathTerms(config, 40, 80);
    const double bound =
        2 * testing_support::ProbabilisticGamma(path, u) * eager[i].abs().max().item<double>();
    EXPECT_LE((flash[i] - eager[i]).abs().max().item<double>(), bound) << "tensor " << i;
  }
}

// A tiny training run through the Trainer: flash's loss trajectory matches eager's
// (fp32; relative tolerance documented in plugins/attention/flash/README.md).
TEST(FlashAttentionTest, TinyTrainingLossesMatchEager) {
  testing_support::ExpectTinyLossesMatchEager(4, {"strategies.attention.plugin=\"flash\""});
}

}  // namespace
}  // namespace memsweep::plugins::flash

namespace memsweep::plugins::flash {
namespace {

TEST(FlashAttentionTest, RejectsATileSizeOutOfRange) {
  try {
    testing_support::Train(testing_support::TinyRun(
        1, {"strategies.attention.plugin=\"flash\"", "strategies.attention.q_tile=-4"}));
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("q_tile = -4 is out of range"), std::string::npos)
        << e.what();
  }
}

TEST(FlashAttentionTest, RejectsAnUnknownInstructionSet) {
  try {
    testing_support::Train(testing_support::TinyRun(
        1, {"strategies.attention.plugin=\"flash\"", "strategies.attention.isa=\"sse4\""}));
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("isa = \"sse4\" is not an instruction set"),
              std::string::npos)
        << e.what();
  }
}

TEST(FlashAttentionTest, RecordsWhichInstructionSetRan) {
  const auto result = testing_support::Train(testing_support::TinyRun(
      1, {"strategies.attention.plugin=\"flash\"", "strategies.attention.isa=\"baseline\""}));
  EXPECT_EQ(result.plugin_metrics.count("flash.isa.baseline"), 1u);
  const auto automatic =
      testing_support::Train(testing_support::TinyRun(1, {"strategies.attention.plugin=\"flash\""}));
  EXPECT_EQ(automatic.plugin_metrics.count(std::string("flash.isa.") + IsaName(BestIsa())), 1u);
}

}  // namespace
}  // namespace memsweep::plugins::flash
