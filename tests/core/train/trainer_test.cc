#include "core/train/trainer.h"

#include <gtest/gtest.h>

#include "core/memory/tracking_allocator.h"
#include "support/run_configs.h"

namespace memsweep::train {
namespace {

using testing_support::TinyRun;

std::vector<double> Losses(const RunResult& result) {
  std::vector<double> losses;
  for (const auto& s : result.steps) losses.push_back(s.loss);
  return losses;
}

TEST(TrainerTest, LossDecreasesOnTheBundledCorpus) {
  config::RunConfig cfg = TinyRun(30);
  cfg.data.seq_len = 128;
  cfg.data.micro_batch_size = 8;
  const RunResult result = Trainer(cfg).Run();
  ASSERT_EQ(result.status, RunStatus::kOk) << result.error;
  ASSERT_EQ(result.steps.size(), 30u);
  double first = 0, last = 0;
  for (int i = 0; i < 5; ++i) first += result.steps[i].loss / 5;
  for (int i = 25; i < 30; ++i) last += result.steps[i].loss / 5;
  EXPECT_LT(last, first - 1.0) << "first 5 steps " << first << ", last 5 " << last;
  EXPECT_NEAR(result.steps.front().loss, std::log(512.0), 0.3);  // uniform over the vocabulary
}

TEST(TrainerTest, SameSeedGivesBitwiseIdenticalLosses) {
  const RunResult a = Trainer(TinyRun(5)).Run();
  const RunResult b = Trainer(TinyRun(5)).Run();
  ASSERT_EQ(a.status, RunStatus::kOk) << a.error;
  EXPECT_EQ(Losses(a), Losses(b));  // exact, not approximate
  config::RunConfig other = TinyRun(5);
  other.experiment.seed = 43;
  EXPECT_NE(Losses(Trainer(other).Run()), Losses(a));
}

TEST(TrainerTest, ModelStateCategoriesEqualClosedFormSums) {
  for (const char* preset : {"tiny", "small"}) {
    config::RunConfig cfg = TinyRun(1);
    cfg.model.llama = *model::LlamaPreset(preset);
    cfg.data.seq_len = 16;
    cfg.data.micro_batch_size = 1;
    const RunResult result = Trainer(cfg).Run();
    ASSERT_EQ(result.status, RunStatus::kOk) << result.error;
    const int64_t n = cfg.model.llama.ParameterCount();
    EXPECT_EQ(result.memory.params_bytes, 4 * n) << preset;
    EXPECT_EQ(result.memory.grads_bytes, 4 * n) << preset;
    EXPECT_EQ(result.memory.optimizer_bytes, 8 * n) << preset;  // AdamW: exp_avg + exp_avg_sq
    EXPECT_EQ(result.memory.activations_bytes,
              result.memory.peak_allocated_bytes - 16 * n) << preset;
    EXPECT_GE(result.memory.peak_allocated_bytes, 16 * n) << preset;
  }
}

TEST(TrainerTest, SavedActivationsGrowLinearlyWithBatchRows) {
  auto saved = [](int64_t rows) {
    config::RunConfig cfg = TinyRun(1);
    cfg.data.padding = data::Padding::kMaxLength;
    cfg.data.micro_batch_size = rows;
    return Trainer(cfg).Run().memory.saved_activations_bytes;
  };
  const int64_t one = saved(1), two = saved(2), four = saved(4);
  ASSERT_GT(one, 0);
  EXPECT_EQ(four - two, 2 * (two - one));  // exact: per-row activations are a fixed size
}

TEST(TrainerTest, BudgetOomIsAResultAndMemoryReturnsToBaseline) {
  auto& tracker = memory::TrackingAllocator::Instance();
  const int64_t baseline = tracker.AllocatedBytes();
  config::RunConfig big = TinyRun(2);
  big.data.padding = data::Padding::kMaxLength;
  big.data.micro_batch_size = 16;
  big.device.memory_budget_bytes = 8LL << 20;
  const RunResult oom = Trainer(big).Run();
  ASSERT_EQ(oom.status, RunStatus::kOom) << oom.error;
  ASSERT_TRUE(oom.oom.has_value());
  EXPECT_TRUE(oom.oom->stage == "forward" || oom.oom->stage == "backward") << oom.oom->stage;
  EXPECT_GT(oom.oom->requested_bytes, 0);
  EXPECT_NE(oom.error.find("Tried to allocate"), std::string::npos) << oom.error;
  EXPECT_EQ(tracker.AllocatedBytes(), baseline);
  EXPECT_FALSE(tracker.Budget().has_value());  // the run's budget does not outlive it

  config::RunConfig smaller = big;
  smaller.data.micro_batch_size = 1;
  const RunResult ok = Trainer(smaller).Run();
  EXPECT_EQ(ok.status, RunStatus::kOk) << ok.error;
  EXPECT_LE(ok.memory.peak_allocated_bytes, 8LL << 20);
  EXPECT_EQ(tracker.AllocatedBytes(), baseline);
}

TEST(TrainerTest, AccumulationMatchesOneLargeBatch) {
  config::RunConfig whole = TinyRun(4);
  whole.data.micro_batch_size = 8;
  config::RunConfig split = whole;
  split.data.micro_batch_size = 1;
  split.data.accumulation_steps = 8;
  const auto a = Losses(Trainer(whole).Run());
  const auto b = Losses(Trainer(split).Run());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-5 * a[i]) << "step " << i;
}

TEST(TrainerTest, RecordsThroughputAndTimeline) {
  const RunResult r = Trainer(TinyRun(4)).Run();
  ASSERT_EQ(r.status, RunStatus::kOk);
  EXPECT_EQ(r.summary.measured_steps, 3);
  EXPECT_GT(r.summary.tokens_per_s, 0);
  EXPECT_GT(r.summary.mfu, 0);
  EXPECT_LT(r.summary.mfu, 1);
  EXPECT_GE(r.summary.step_time_p90_s, r.summary.step_time_median_s);
  EXPECT_GT(r.summary.padding_fraction, 0);  // long-tailed lengths, padded to the longest
  int forwards = 0;
  for (const auto& point : r.timeline) forwards += std::string(point.stage) == "forward";
  EXPECT_EQ(forwards, 4);
  EXPECT_EQ(std::string(r.timeline.back().stage), "run_end");
  EXPECT_EQ(r.timeline.back().allocated_bytes, 0);
}

}  // namespace
}  // namespace memsweep::train
