// The loss slot in training runs: loss/chunked and loss/fused follow loss/full's trajectory
// (fp32, every step's loss within 1e-6 relative) with packed rows, padding, accumulation, tied
// and untied heads and a frozen head under LoRA; the memory each keeps, against the logits'
// bytes of a known shape.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "support/run_configs.h"

namespace memsweep::loss_training_test {
namespace {

using testing_support::Losses;
using testing_support::TinyRun;
using testing_support::Train;

std::vector<std::string> With(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

void ExpectWithinOneMillionth(const std::vector<double>& actual, const std::vector<double>& full,
                              const std::string& what) {
  ASSERT_EQ(actual.size(), full.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    const double rel = std::abs(actual[i] - full[i]) / std::abs(full[i]);
    worst = std::max(worst, rel);
    EXPECT_LE(rel, 1e-6) << what << " step " << i << ": " << actual[i] << " vs " << full[i];
  }
  std::printf("%s: largest relative deviation from loss/full %.3g\n", what.c_str(), worst);
}

// Each setting: loss/full's trajectory, then chunked and fused (several chunkings) against it.
void ExpectLossPluginsFollowFull(const std::vector<std::string>& setting, const std::string& name) {
  const std::vector<double> full = Losses(Train(TinyRun(5, With(setting, {"strategies.loss.plugin=\"full\""}))));
  for (const std::vector<std::string>& loss :
       std::vector<std::vector<std::string>>{
           {"strategies.loss.plugin=\"chunked\"", "strategies.loss.chunks=3"},
           {"strategies.loss.plugin=\"fused\"", "strategies.loss.chunk_tokens=50"},
           {"strategies.loss.plugin=\"fused\""}}) {
    std::string what = name;
    for (const std::string& s : loss) what += " " + s;
    ExpectWithinOneMillionth(Losses(Train(TinyRun(5, With(setting, loss)))), full, what);
  }
}

TEST(LossTrainingTest, ChunkedAndFusedFollowFullWithATiedHead) {
  ExpectLossPluginsFollowFull({}, "tied");
}

TEST(LossTrainingTest, ChunkedAndFusedFollowFullWithAnUntiedHeadAndAccumulation) {
  ExpectLossPluginsFollowFull({"model.tie_word_embeddings=false",
                               "strategies.batching.accumulation_steps=2"},
                              "untied, accumulation 2");
}

TEST(LossTrainingTest, ChunkedAndFusedFollowFullOnPaddedAndPackedRows) {
  ExpectLossPluginsFollowFull({"strategies.packing.plugin=\"none\"",
                               "strategies.batching.padding=\"max_length\""},
                              "padded rows");
  ExpectLossPluginsFollowFull({"strategies.packing.plugin=\"pack\""}, "packed rows");
}

TEST(LossTrainingTest, ChunkedAndFusedFollowFullBehindAFrozenHead) {
  // LoRA freezes the head (and the tied embedding); the hidden states' gradient still flows.
  ExpectLossPluginsFollowFull({"strategies.adapter.plugin=\"lora\"", "strategies.adapter.rank=4",
                               "strategies.adapter.target_modules=[\"q_proj\", \"v_proj\"]"},
                              "lora");
}

// A vocabulary large against the rest (8,192 × hidden 64, 4 × 64 tokens): fp32 logits are
// 4·256·8192 = 8 MiB, as much as the model state.
std::vector<std::string> VocabHeavy() {
  return {"model.vocab_size=8192", "strategies.batching.micro_batch_size=4"};
}

TEST(LossTrainingTest, KeepingTheLogitsCostsExactlyOneLogitsTensorAtTheBackwardPeak) {
  const int64_t logits_bytes = 4LL * 4 * 64 * 8192;
  const train::RunResult lean = Train(TinyRun(2, With(VocabHeavy(), {"strategies.loss.keep_logits=false"})));
  const train::RunResult kept = Train(TinyRun(2, With(VocabHeavy(), {"strategies.loss.keep_logits=true"})));
  std::printf("peak: %lld without, %lld keeping the logits (logits %lld bytes)\n",
              static_cast<long long>(lean.memory.peak_allocated_bytes),
              static_cast<long long>(kept.memory.peak_allocated_bytes),
              static_cast<long long>(logits_bytes));
  EXPECT_EQ(kept.memory.peak_allocated_bytes - lean.memory.peak_allocated_bytes, logits_bytes);
  EXPECT_EQ(Losses(kept), Losses(lean));
}

TEST(LossTrainingTest, FusedKeepsNoLogitsAndChunkedKeepsTheirSoftmax) {
  const int64_t logits_bytes = 4LL * 4 * 64 * 8192;
  const auto peak = [](const std::string& plugin, const std::vector<std::string>& more = {}) {
    const train::RunResult r = Train(TinyRun(2, With(With(VocabHeavy(), {"strategies.loss.plugin=\"" + plugin + "\""}), more)));
    return r.memory.peak_allocated_bytes;
  };
  const int64_t full = peak("full"), chunked = peak("chunked"), fused = peak("fused");
  std::printf("peak: full %lld, chunked %lld, fused %lld (logits %lld bytes)\n",
              static_cast<long long>(full), static_cast<long long>(chunked),
              static_cast<long long>(fused), static_cast<long long>(logits_bytes));
  // full holds the fp32 log-softmax and, in backward, its gradient and the logits' gradient;
  // fused none of them.
  EXPECT_LE(fused, full - 2 * logits_bytes);
  // chunked holds every chunk's log-softmax (one logits tensor in all) but not the whole
  // gradients at once.
  EXPECT_LT(chunked, full);
  EXPECT_GT(chunked, fused + logits_bytes / 2);
}

// The run's largest allocation, against tensors of known size: with loss/full the logits of the
// first micro-batch (4·256·8192 bytes, fp32), allocated in forward under the "logits" label;
// with loss/fused no logits that large exist, and the largest allocation is the embedding table
// (8192·64·4 bytes), built in the model stage.
TEST(LossTrainingTest, TheLargestAllocationIsTheLogitsUnlessTheLossIsFused) {
  const train::RunResult full = Train(TinyRun(2, With(VocabHeavy(), {"strategies.loss.plugin=\"full\""})));
  EXPECT_EQ(full.memory.largest_allocation_bytes, 4LL * 4 * 64 * 8192);
  EXPECT_EQ(full.memory.largest_allocation_stage, "forward");
  EXPECT_EQ(full.memory.largest_allocation_step, 0);
  EXPECT_EQ(full.memory.largest_allocation_micro_batch, 0);
  EXPECT_EQ(full.memory.largest_allocation_what, "logits");
  const train::RunResult fused = Train(TinyRun(2, With(VocabHeavy(), {"strategies.loss.plugin=\"fused\""})));
  EXPECT_EQ(fused.memory.largest_allocation_bytes, 8192LL * 64 * 4);
  EXPECT_EQ(fused.memory.largest_allocation_stage, "model");
  EXPECT_EQ(fused.memory.largest_allocation_what, "parameters");
}

}  // namespace
}  // namespace memsweep::loss_training_test
