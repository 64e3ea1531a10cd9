#include "core/train/trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <stdexcept>

#include "core/config/strategy_resolver.h"
#include "core/env/cache_dir.h"
#include "core/env/gemm_calibration.h"
#include "core/memory/tracking_allocator.h"
#include "memsweep/strategy.h"
#include "support/run_configs.h"
#include "support/scoped_env.h"

namespace memsweep::train {
namespace {

using testing_support::TinyRun;
using testing_support::Losses;
using testing_support::Train;

TEST(TrainerTest, LossDecreasesOnTheBundledCorpus) {
  const RunResult result = Train(TinyRun(30, {"strategies.batching.seq_len=128",
                                               "strategies.batching.micro_batch_size=8"}));
  ASSERT_EQ(result.status, RunStatus::kOk) << result.error;
  ASSERT_EQ(result.steps.size(), 30u);
  double first = 0, last = 0;
  for (int i = 0; i < 5; ++i) first += result.steps[i].loss / 5;
  for (int i = 25; i < 30; ++i) last += result.steps[i].loss / 5;
  EXPECT_LT(last, first - 1.0) << "first 5 steps " << first << ", last 5 " << last;
  EXPECT_NEAR(result.steps.front().loss, std::log(512.0), 0.3);  // uniform over the vocabulary
}

TEST(TrainerTest, SameSeedGivesBitwiseIdenticalLosses) {
  const RunResult a = Train(TinyRun(5));
  const RunResult b = Train(TinyRun(5));
  ASSERT_EQ(a.status, RunStatus::kOk) << a.error;
  EXPECT_EQ(Losses(a), Losses(b));  // exact, not approximate
  EXPECT_NE(Losses(Train(TinyRun(5, {"experiment.seed=43"}))), Losses(a));
}

TEST(TrainerTest, ModelStateCategoriesEqualClosedFormSums) {
  for (const char* preset : {"tiny", "small"}) {
    const config::RunConfig cfg =
        TinyRun(1, {std::string("model.preset=") + preset, "strategies.batching.seq_len=16",
                    "strategies.batching.micro_batch_size=1"});
    const RunResult result = Train(cfg);
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
    return Train(TinyRun(1, {"strategies.batching.padding=max_length",
                             "strategies.batching.micro_batch_size=" + std::to_string(rows)}))
        .memory.saved_activations_bytes;
  };
  const int64_t one = saved(1), two = saved(2), four = saved(4);
  ASSERT_GT(one, 0);
  EXPECT_EQ(four - two, 2 * (two - one));  // exact: per-row activations are a fixed size
}

TEST(TrainerTest, BudgetOomIsAResultAndMemoryReturnsToBaseline) {
  auto& tracker = memory::TrackingAllocator::Instance();
  const int64_t baseline = tracker.AllocatedBytes();
  const std::vector<std::string> budget = {"strategies.batching.padding=max_length",
                                           "device.memory_budget=\"8MiB\""};
  auto with = [&budget](const std::string& rows) {
    std::vector<std::string> overrides = budget;
    overrides.push_back("strategies.batching.micro_batch_size=" + rows);
    return TinyRun(2, overrides);
  };
  const RunResult oom = Train(with("16"));
  ASSERT_EQ(oom.status, RunStatus::kOom) << oom.error;
  ASSERT_TRUE(oom.oom.has_value());
  EXPECT_TRUE(oom.oom->stage == "forward" || oom.oom->stage == "backward") << oom.oom->stage;
  EXPECT_GT(oom.oom->requested_bytes, 0);
  EXPECT_NE(oom.error.find("Tried to allocate"), std::string::npos) << oom.error;
  EXPECT_EQ(tracker.AllocatedBytes(), baseline);
  EXPECT_FALSE(tracker.Budget().has_value());  // the run's budget does not outlive it

  const RunResult ok = Train(with("1"));
  EXPECT_EQ(ok.status, RunStatus::kOk) << ok.error;
  EXPECT_LE(ok.memory.peak_allocated_bytes, 8LL << 20);
  EXPECT_EQ(tracker.AllocatedBytes(), baseline);
}

TEST(TrainerTest, AccumulationMatchesOneLargeBatch) {
  const config::RunConfig whole = TinyRun(4, {"strategies.batching.micro_batch_size=8"});
  const auto a = Losses(Train(whole));
  const auto b = Losses(Train(TinyRun(4, {"strategies.batching.micro_batch_size=1",
                                          "strategies.batching.accumulation_steps=8"})));
  // The same tokens per step, summed in another order.
  testing_support::ExpectSameTrajectory(b, a, testing_support::StepPathTerms(whole));
}

TEST(TrainerTest, RecordsThroughputAndTimeline) {
  auto& tracker = memory::TrackingAllocator::Instance();
  const int64_t baseline = tracker.AllocatedBytes();
  const RunResult r = Train(TinyRun(4));
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
  EXPECT_EQ(tracker.AllocatedBytes(), baseline);
  ASSERT_EQ(r.plugins.size(), 11u);  // one per slot, no callbacks
  EXPECT_EQ(r.plugins.front().slot, "allocator");
  EXPECT_EQ(r.plugins.front().name, "default");
}

// A calibration cached while the machine was busy (the bf16 cells that printed an MFU of
// 113-127 %): a run that beats it measures the peak again, keeps the higher figure for later
// runs and reports its MFU against that — never above 1 without a mark.
TEST(TrainerTest, ARunFasterThanItsKeptGemmPeakMeasuresThePeakAgain) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) /
                        ("memsweep_trainer_peak_" + std::to_string(getpid()));
  fs::remove_all(root);
  // A first run names (and writes) the calibration file of this configuration.
  std::string name;
  {
    const testing_support::ScopedEnv xdg("XDG_CACHE_HOME", (root / "first").c_str());
    ASSERT_EQ(Train(TinyRun(2)).status, RunStatus::kOk);
    for (const auto& kept : env::KeptGemmCalibrations()) name = fs::path(kept.file).filename();
  }
  ASSERT_FALSE(name.empty());
  // The same file in another cache home, with a rate far below any CPU's: 1 MFLOP/s.
  const testing_support::ScopedEnv xdg("XDG_CACHE_HOME", (root / "low").c_str());
  const fs::path low = env::CacheDir("gemm") / name;
  ASSERT_TRUE(env::WriteCacheFile(low, "1000000\n"));
  const RunResult r = Train(TinyRun(3));
  ASSERT_EQ(r.status, RunStatus::kOk) << r.error;
  EXPECT_EQ(r.summary.peak_flops_check, "remeasured");
  EXPECT_GT(r.summary.peak_flops, 1e6);
  EXPECT_GT(r.summary.mfu, 0);
  EXPECT_LE(r.summary.mfu, 1);
  const std::vector<env::GemmCalibration> kept = env::KeptGemmCalibrations();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].flops, r.summary.peak_flops);  // later runs divide by the new figure
  EXPECT_FALSE(kept[0].measured_at.empty());
  EXPECT_GE(kept[0].cores, 1);
}

// A callback that records a run figure and a step figure in every step, and throws at the end of
// `stage` of step `at_step`.
class FailingRecorder final : public CallbackStrategy {
 public:
  FailingRecorder(Stage stage, int64_t at_step) : stage_(stage), at_step_(at_step) {}
  void OnStageBegin(Stage stage, RunContext& ctx) override {
    if (stage == Stage::kEnvironment) ctx.record("recorder.set_up", 1.0);
    if (stage == Stage::kStepBegin) {
      ctx.record("recorder.steps", 1.0);
      ctx.record_step("recorder.step", static_cast<double>(ctx.step));
    }
  }
  void OnStageEnd(Stage stage, RunContext& ctx) override {
    if (stage == Stage::kForward) ctx.record("recorder.forwards", 1.0);
    if (stage == stage_ && ctx.step == at_step_) {
      throw std::runtime_error("recorder fails at step " + std::to_string(at_step_));
    }
  }

 private:
  Stage stage_;
  int64_t at_step_;
};

// A run a plugin fails keeps what completed: the steps before the failing one, and the plugin
// figures recorded up to there — the per-step rows and the run's sums agree.
TEST(TrainerTest, AFailedRunKeepsTheFiguresOfTheStepsItCompleted) {
  for (const Stage stage : {Stage::kForward, Stage::kStepEnd}) {
    SCOPED_TRACE(StageName(stage));
    const config::RunConfig cfg = TinyRun(4);
    StrategySet set = config::InstantiateStrategies(cfg);
    set.push_back({"callbacks", "failing-recorder", "1.0", std::make_shared<FailingRecorder>(stage, 2)});
    const RunResult r = Trainer(cfg, std::move(set)).Run();
    ASSERT_EQ(r.status, RunStatus::kFailed);
    EXPECT_NE(r.error.find("recorder fails at step 2"), std::string::npos) << r.error;
    ASSERT_EQ(r.steps.size(), 2u);
    EXPECT_EQ(r.summary.steps_completed, 2);
    for (size_t i = 0; i < r.steps.size(); ++i) {
      EXPECT_EQ(r.steps[i].metrics.at("recorder.step"), static_cast<double>(i));
    }
    EXPECT_EQ(r.plugin_metrics.at("recorder.set_up"), 1.0);
    EXPECT_EQ(r.plugin_metrics.at("recorder.steps"), 2.0);
    EXPECT_EQ(r.plugin_metrics.at("recorder.forwards"), 2.0);  // one micro-batch per step
  }
}

}  // namespace
}  // namespace memsweep::train
