#include "core/model/llama.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <cmath>

#include "core/data/batch.h"
#include "attention/eager/eager_attention.h"
#include "core/model/attention.h"

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
  EXPECT_FALSE(at::allclose(before.narrow(1, 8, 4), after.narrow(1, 8, 4)));
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

TEST(AttentionTest, GroupedQueryHeadsMatchExplicitlyRepeatedHeads) {
  const at::Tensor q = at::randn({2, 4, 6, 8});
  const at::Tensor k = at::randn({2, 2, 6, 8});
  const at::Tensor v = at::randn({2, 2, 6, 8});
  const at::Tensor grouped = EagerCausalAttention(q, k, v, {});
  const at::Tensor repeated =
      EagerCausalAttention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), {});
  EXPECT_TRUE(at::allclose(grouped, repeated, 1e-6, 1e-6));
  // First query position attends only to the first key: output is that key's value.
  EXPECT_TRUE(at::allclose(grouped.select(2, 0), v.repeat_interleave(2, 1).select(2, 0)));
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
  EXPECT_TRUE(at::allclose(EagerCausalAttention(q, k, v, {}), expected, 1e-10, 1e-10));
}

TEST(NextTokenLossTest, SumsRealTokensAndDividesByTheNormalizer) {
  const at::Tensor logits = at::randn({1, 3, 5});
  const at::Tensor targets = at::tensor(std::vector<int64_t>{1, data::kIgnoreIndex, 4}).view({1, 3});
  const at::Tensor logp = at::log_softmax(logits[0], -1);
  const double expected = -(logp[0][1].item<double>() + logp[2][4].item<double>()) / 10.0;
  EXPECT_NEAR(NextTokenLoss(logits, targets, 10.0).item<double>(), expected, 1e-6);
}

}  // namespace
}  // namespace memsweep::model
