#include "packing/concat/concat_batch_source.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <string>
#include <vector>

#include "attention/eager/eager_attention.h"
#include "core/config/strategy_resolver.h"
#include "memsweep/batch_assembly.h"
#include "core/data/byte_tokenizer.h"
#include "memsweep/epoch_order.h"
#include "core/model/llama.h"
#include "core/model/llama_config.h"
#include "plugins/packing/packing_test_support.h"
#include "support/run_configs.h"
#include "support/tolerances.h"

namespace memsweep::plugins::packing {
namespace {

using testing_support::DevilsDictionary;
using testing_support::RowOf;

// Rows are consecutive windows of one stream: the documents in the seeded epoch order, whole,
// back to back; each row starts on the last token of the one before.
TEST(ConcatTest, RowsAreConsecutiveWindowsOfTheDocumentStream) {
  const data::DataConfig config = DevilsDictionary(/*seq_len=*/64, /*micro_batch_size=*/4);
  ConcatBatchSource source(config, /*seed=*/21);
  std::vector<int64_t> stream;
  for (int i = 0; i < 30; ++i) {
    const data::Batch batch = source.Next();
    ASSERT_EQ(batch.Rows(), 4);
    ASSERT_EQ(batch.Length(), 64);
    EXPECT_FALSE(batch.segment_ids.defined());
    EXPECT_EQ(batch.real_tokens, 4 * 64);  // nothing is padding
    EXPECT_EQ(batch.positions, 4 * 64);
    for (int64_t r = 0; r < 4; ++r) {
      const auto inputs = RowOf(batch.input_ids, r);
      const auto targets = RowOf(batch.targets, r);
      EXPECT_TRUE(at::equal(batch.position_ids[r], at::arange(64, at::kLong)));
      if (stream.empty()) {
        stream.push_back(inputs[0]);
      } else {
        EXPECT_EQ(inputs[0], stream.back());
      }
      for (size_t t = 0; t < inputs.size(); ++t) {
        if (t > 0) EXPECT_EQ(inputs[t], targets[t - 1]);
      }
      stream.insert(stream.end(), targets.begin(), targets.end());
    }
  }
  const data::TokenSequences documents =
      data::LoadTokenSequences(config, data::LongDocuments::kKeep);
  data::EpochOrder order(documents.Count(), /*seed=*/21);
  std::vector<int64_t> expected;
  while (expected.size() < stream.size()) {
    const int64_t d = order.Next();
    expected.insert(expected.end(), documents.Data(d), documents.Data(d) + documents.Length(d));
  }
  expected.resize(stream.size());
  EXPECT_EQ(stream, expected);
}

// Per-position losses of a forward pass with the eager reference attention.
at::Tensor TokenLosses(model::LlamaModel& model, const data::Batch& batch) {
  const at::Tensor logits = model->forward(batch.input_ids, batch.position_ids, batch.segment_ids);
  return at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), batch.targets.reshape({-1}),
                                {}, at::Reduction::None, data::kIgnoreIndex);
}

// Why concat is not equivalent and pack is: the second document of a row gets the same losses as
// when trained alone with pack (attention confined, positions restarting), different ones with
// concatenation (it attends to the first document, its positions continue from it).
TEST(ConcatTest, SecondDocumentOfARowSeesTheFirstUnlikePack) {
  torch::manual_seed(1);
  model::LlamaModel model(model::LlamaPreset("tiny").value());
  model->SetAttention(EagerCausalAttention);
  at::NoGradGuard no_grad;
  const std::vector<int32_t> first = data::Encode("A warm day in the garden.");
  const std::vector<int32_t> second = data::Encode("Cynic, n. A blackguard.");
  const auto n1 = static_cast<int64_t>(first.size()), n2 = static_cast<int64_t>(second.size());

  const at::Tensor alone = TokenLosses(
      model, data::AssembleBatch({{{second.data(), n2}}}, n2 - 1, /*with_segments=*/false));
  const at::Tensor packed = TokenLosses(
      model, data::AssembleBatch({{{first.data(), n1}, {second.data(), n2}}}, n1 + n2 - 2,
                                 /*with_segments=*/true));
  std::vector<int32_t> joined = first;
  joined.insert(joined.end(), second.begin(), second.end());
  const at::Tensor concatenated = TokenLosses(
      model, data::AssembleBatch({{{joined.data(), n1 + n2}}}, n1 + n2 - 1, false));

  // The second document's positions: after the first's n1 - 1 (pack) or n1 (concat: EOS -> BOS).
  const at::Tensor packed_second = packed.slice(0, n1 - 1, n1 + n2 - 2);
  const at::Tensor concat_second = concatenated.slice(0, n1, n1 + n2 - 1);
  // Packed, the second document is the same computation as alone (its own positions, attending
  // only to itself; masked scores add exact zeros) in another order and other shapes: each within
  // γ̃_F(λ) of exact arithmetic relative to the losses' scale (support/tolerances.h; F the
  // forward's rounding path, the longer packed row). Concatenated, it attends to the first
  // document as well: a difference larger than rounding could make.
  const double rounding =
      2 *
      testing_support::ProbabilisticGamma(
          testing_support::LlamaForwardPathTerms(model->config(), n1 + n2, n1 + n2),
          testing_support::kFp32Roundoff) *
      alone.abs().max().item<double>();
  EXPECT_LE((packed_second - alone).abs().max().item<double>(), rounding);
  EXPECT_GT((concat_second - alone).abs().max().item<double>(), rounding);
}

TEST(ConcatTest, OnlyConcatAndBucketedDeclareTheTrainingMathChanged) {
  auto math_preserving = [](const std::string& plugin) {
    const auto strategies = config::InstantiateStrategies(
        testing_support::TinyRun(1, {"strategies.packing.plugin=\"" + plugin + "\""}));
    for (const auto& active : strategies) {
      if (active.slot == "packing") return active.impl->MathPreserving();
    }
    ADD_FAILURE() << "no packing strategy";
    return true;
  };
  EXPECT_FALSE(math_preserving("concat"));
  EXPECT_FALSE(math_preserving("bucketed"));
  EXPECT_TRUE(math_preserving("pack"));
  EXPECT_TRUE(math_preserving("none"));
}

TEST(ConcatTest, TrainsWithoutPadding) {
  const train::RunResult r = testing_support::Train(testing_support::TinyRun(
      2, {"strategies.packing.plugin=\"concat\"", "strategies.batching.seq_len=128"}));
  ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
  EXPECT_EQ(r.summary.padding_fraction, 0.0);
  EXPECT_EQ(r.steps[0].tokens, 4 * 128);
}

}  // namespace
}  // namespace memsweep::plugins::packing
