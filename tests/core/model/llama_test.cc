#include "core/model/llama.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <cmath>

#include "memsweep/batch.h"
#include "attention/eager/eager_attention.h"
#include "memsweep/attention.h"
#include "plugins/attention/attention_test_support.h"
#include "support/tolerances.h"

namespace memsweep::model {
namespace {

using plugins::EagerCausalAttention;

LlamaModel TinyModel() {
  LlamaModel model(*LlamaPreset("tiny"));
  model->SetAttention(EagerCausalAttention);
  return model;
}

at::Tensor Positions(int64_t b, int64_t t) {
  return at::arange(t, at::kLong).unsqueeze(0).expand({b, t}).contiguous();
}

TEST(LlamaModelTest, ProducesLogitsOfTheRightShape) {
  torch::manual_seed(0);
  LlamaModel model = TinyModel();
  const at::Tensor ids = at::randint(0, 259, {2, 9}, at::kLong);
  const at::Tensor logits = model->forward(ids, Positions(2, 9));
  EXPECT_EQ(logits.sizes(), (at::IntArrayRef{2, 9, 512}));
}

TEST(LlamaModelTest, IsCausal) {
  torch::manual_seed(0);
  LlamaModel model = TinyModel();
  at::Tensor ids = at::randint(0, 259, {1, 12}, at::kLong);
  const at::Tensor before = model->forward(ids, Positions(1, 12));
  ids[0][8] = (ids[0][8].item<int64_t>() + 1) % 259;
  const at::Tensor after = model->forward(ids, Positions(1, 12));
  EXPECT_TRUE(at::equal(before.narrow(1, 0, 8), after.narrow(1, 0, 8)));
  // From the changed token on, the logits move by more than rounding could: the same forward
  // pass of a changed input, not the same input computed in another order, whose difference
  // would stay within 2·γ̃_F(λ) of the logits' scale (support/tolerances.h; F the forward's path).
  const double rounding = 2 *
                          testing_support::ProbabilisticGamma(
                              testing_support::LlamaForwardPathTerms(model->config(), 12, 12),
                              testing_support::kFp32Roundoff) *
                          before.abs().max().item<double>();
  EXPECT_GT((before.narrow(1, 8, 4) - after.narrow(1, 8, 4)).abs().max().item<double>(), rounding);
}

TEST(LlamaModelTest, SameSeedGivesSameWeights) {
  torch::manual_seed(7);
  LlamaModel a(*LlamaPreset("tiny"));
  torch::manual_seed(7);
  LlamaModel b(*LlamaPreset("tiny"));
  const auto pa = a->parameters(), pb = b->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(at::equal(pa[i], pb[i]));
}

// Deferred construction (the trainer's model stage): every parameter has its shape and no memory
// until its group is built; built group by group from the same seed, the weights are bitwise
// those of the model built at once — for untied and tied embeddings, with every kind of bias.
TEST(LlamaModelTest, BuiltGroupByGroupGivesTheSameWeightsAndNoMemoryBefore) {
  for (const bool tied : {false, true}) {
    LlamaConfig config = *LlamaPreset("tiny");
    config.tie_word_embeddings = tied;
    config.qkv_bias = config.o_bias = config.mlp_bias = true;
    torch::manual_seed(11);
    LlamaModel now(config);
    torch::manual_seed(11);
    LlamaModel deferred(config, Construction::kDeferred);
    const auto expected = now->parameters(), got = deferred->parameters();
    ASSERT_EQ(expected.size(), got.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].sizes(), expected[i].sizes()) << i;
      EXPECT_EQ(got[i].storage().nbytes(), 0u) << i;
    }
    EXPECT_EQ(deferred->BuildGroupCount(), static_cast<size_t>(config.num_hidden_layers) + 2);
    EXPECT_THROW(deferred->BuildGroup(1), c10::Error);  // in order only
    size_t built = 0;
    for (size_t g = 0; g < deferred->BuildGroupCount(); ++g) {
      const std::vector<at::Tensor> group = deferred->BuildGroup(g);
      built += group.size();
      for (const at::Tensor& p : group) EXPECT_EQ(p.storage().nbytes(), p.nbytes());
    }
    EXPECT_EQ(built, got.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(at::equal(got[i], expected[i])) << "parameter " << i << (tied ? " (tied)" : "");
    }
    EXPECT_THROW(deferred->BuildGroup(deferred->BuildGroupCount()), c10::Error);
  }
}

TEST(AttentionTest, GroupedQueryHeadsMatchExplicitlyRepeatedHeads) {
  const at::Tensor q = at::randn({2, 4, 6, 8});
  const at::Tensor k = at::randn({2, 2, 6, 8});
  const at::Tensor v = at::randn({2, 2, 6, 8});
  const at::Tensor grouped = EagerCausalAttention(q, k, v, {});
  const at::Tensor repeated =
      EagerCausalAttention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), {});
  // Two fp32 computations of the same attention, each within its bound of exact arithmetic.
  const testing_support::AttentionProblem p{q.to(at::kDouble), k.to(at::kDouble), v.to(at::kDouble),
                                            at::zeros_like(q, at::kDouble), {}};
  testing_support::ExpectWithin(grouped, repeated,
                                2 * testing_support::ErrorBounds(p, at::kFloat).out, "output");
  // First query position attends only to the first key: its probability is exp(0)/exp(0) = 1
  // and every other one exp(-inf) = 0, so the output is that key's value exactly.
  EXPECT_TRUE(at::equal(grouped.select(2, 0), v.repeat_interleave(2, 1).select(2, 0)));
}

TEST(AttentionTest, EagerMatchesAFloat64Reference) {
  const at::Tensor q = at::randn({1, 2, 5, 4}, at::kDouble);
  const at::Tensor k = at::randn({1, 2, 5, 4}, at::kDouble);
  const at::Tensor v = at::randn({1, 2, 5, 4}, at::kDouble);
  at::Tensor expected = at::zeros_like(q);
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t i = 0; i < 5; ++i) {
      const at::Tensor scores = at::mv(k[0][h].narrow(0, 0, i + 1), q[0][h][i]) / 2.0;
      expected[0][h][i] = at::mv(v[0][h].narrow(0, 0, i + 1).t(), at::softmax(scores, 0));
    }
  }
  // Two float64 computations (u = 2^-53), each within its bound of exact arithmetic.
  const testing_support::AttentionProblem p{q, k, v, at::zeros_like(q), {}};
  testing_support::ExpectWithin(EagerCausalAttention(q, k, v, {}), expected,
                                2 * testing_support::ErrorBounds(p, at::kDouble).out, "output");
}

TEST(NextTokenLossTest, SumsRealTokensAndDividesByTheNormalizer) {
  const at::Tensor logits = at::randn({1, 3, 5});
  const at::Tensor targets = at::tensor(std::vector<int64_t>{1, data::kIgnoreIndex, 4}).view({1, 3});
  const at::Tensor logp = at::log_softmax(logits[0], -1);
  const double expected = -(logp[0][1].item<double>() + logp[2][4].item<double>()) / 10.0;
  // Both sides compute fp32 log-softmaxes of 5 logits: z_i − m − log Σ_j exp(z_j − m) errs by
  // ≤ u·|z_i − m| + u·max_j|z_j − m| (the shifted arguments of exp) + e (exp) + γ_4 (the sum)
  // + e·log 5 (log) + u·|log p_i| (the last subtraction), |z − m| ≤ 2·max|z|; then the sum of two
  // and the division by 10 round twice more. Each side within that, the two within twice.
  const double u = testing_support::kFp32Roundoff, e = testing_support::ExpError(u);
  const double z = logits.abs().max().item<double>();
  const double logp_bound = 4 * z * u + e * (1 + std::log(5.0)) + testing_support::Gamma(4, u) +
                            u * logp.abs().max().item<double>();
  EXPECT_NEAR(NextTokenLoss(logits, targets, 10.0).item<double>(), expected,
              2 * (2 * logp_bound / 10.0 + 2 * u * std::abs(expected)));
}

}  // namespace
}  // namespace memsweep::model
