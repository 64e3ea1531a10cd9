// Loss-equivalence verification on synthetic trajectories and configurations: tolerance edges,
// NaN and infinite losses, length and step mismatches, and how each kind of difference between
// two runs turns into a verdict.
#include "core/results/loss_verification.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/results/config_difference.h"

namespace memsweep::results {
namespace {

using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<StepLoss> Trajectory(const std::vector<double>& losses) {
  std::vector<StepLoss> out;
  for (size_t i = 0; i < losses.size(); ++i) out.push_back({static_cast<int64_t>(i), losses[i]});
  return out;
}

json Strategy(const std::string& slot, const std::string& plugin, json params = json::object()) {
  return {{"slot", slot}, {"plugin", plugin}, {"version", "1.0.0"}, {"params", params}};
}

// An fp32 run of the tiny model: default strategies, 4 steps of 128 tokens.
RunEvidence Fp32Run(int64_t run_id, const std::vector<double>& losses) {
  RunEvidence run;
  run.run_id = run_id;
  run.status = RunStatus::kOk;
  run.seed = 42;
  run.compute_dtype = "float32";
  run.config = {
      {"experiment", {{"name", "x"}, {"steps", static_cast<int64_t>(losses.size())},
                      {"warmup_steps", 1}, {"seed", 42}}},
      {"optimizer", {{"lr", 0.003}}},
      {"model", {{"preset", "tiny"}}},
      {"device", {{"threads", 1}, {"memory_budget_bytes", 1 << 26}}},
      {"strategies",
       {Strategy("precision", "fp32"),
        Strategy("batching", "default", {{"micro_batch_size", 4}, {"accumulation_steps", 1}}),
        Strategy("checkpointing", "none")}}};
  run.plugins = {{"precision", "fp32", true}, {"batching", "default", true},
                 {"checkpointing", "none", true}};
  run.losses = Trajectory(losses);
  run.tokens.assign(losses.size(), 128);
  return run;
}

void SetStrategy(RunEvidence& run, const std::string& slot, const std::string& plugin,
                 bool preserving, json params = json::object()) {
  for (json& entry : run.config["strategies"]) {
    if (entry["slot"] == slot) entry = Strategy(slot, plugin, params);
  }
  for (PluginFlag& flag : run.plugins) {
    if (flag.slot == slot) flag = {slot, plugin, preserving};
  }
}

const std::vector<double> kLosses = {6.25, 5.5, 5.0, 4.75};

TEST(CompareTrajectoriesTest, IdenticalTrajectoriesAreBitwiseEqual) {
  const TrajectoryDeviation d = CompareTrajectories(Trajectory(kLosses), Trajectory(kLosses));
  EXPECT_FALSE(d.problem);
  EXPECT_TRUE(d.bitwise_equal);
  EXPECT_EQ(d.steps_compared, 4);
  EXPECT_EQ(d.max_abs, 0.0);
  EXPECT_EQ(d.max_rel, 0.0);
}

TEST(CompareTrajectoriesTest, ReportsTheLargestRelativeDeviationAndItsStep) {
  // Step 1 has the larger absolute deviation, step 3 the larger relative one.
  const TrajectoryDeviation d = CompareTrajectories(Trajectory({8.0, 8.0, 1.0, 1.0}),
                                                    Trajectory({8.0, 8.5, 1.0, 1.25}));
  EXPECT_FALSE(d.bitwise_equal);
  EXPECT_DOUBLE_EQ(d.max_abs, 0.5);
  EXPECT_DOUBLE_EQ(d.max_rel, 0.25);
  EXPECT_EQ(d.step_of_max, 3);
}

TEST(CompareTrajectoriesTest, TwoNaNsAgreeOneNaNIsAnInfiniteDeviation) {
  const TrajectoryDeviation both =
      CompareTrajectories(Trajectory({5.0, kNaN}), Trajectory({5.0, kNaN}));
  EXPECT_TRUE(both.bitwise_equal);
  EXPECT_EQ(both.max_rel, 0.0);

  const TrajectoryDeviation one =
      CompareTrajectories(Trajectory({5.0, 4.0, 3.0}), Trajectory({5.0, kNaN, 3.0}));
  EXPECT_FALSE(one.bitwise_equal);
  EXPECT_EQ(one.max_abs, kInf);
  EXPECT_EQ(one.max_rel, kInf);
  EXPECT_EQ(one.step_of_max, 1);

  const TrajectoryDeviation infinities =
      CompareTrajectories(Trajectory({kInf, 1.0}), Trajectory({-kInf, 1.0}));
  EXPECT_EQ(infinities.max_rel, kInf);
  EXPECT_EQ(infinities.step_of_max, 0);
}

TEST(CompareTrajectoriesTest, ZeroReferenceLoss) {
  EXPECT_EQ(CompareTrajectories(Trajectory({0.0}), Trajectory({0.0})).max_rel, 0.0);
  const TrajectoryDeviation d = CompareTrajectories(Trajectory({0.0}), Trajectory({1e-9}));
  EXPECT_EQ(d.max_rel, kInf);
  EXPECT_DOUBLE_EQ(d.max_abs, 1e-9);
}

TEST(CompareTrajectoriesTest, LengthOrStepMismatchComparesNothing) {
  const TrajectoryDeviation shorter =
      CompareTrajectories(Trajectory({1.0, 2.0, 3.0}), Trajectory({1.0, 2.0}));
  ASSERT_TRUE(shorter.problem);
  EXPECT_EQ(*shorter.problem, "2 steps vs reference 3");
  EXPECT_EQ(shorter.steps_compared, 0);

  const TrajectoryDeviation shifted =
      CompareTrajectories({{0, 1.0}, {1, 2.0}}, {{0, 1.0}, {2, 2.0}});
  ASSERT_TRUE(shifted.problem);
  EXPECT_EQ(*shifted.problem, "step 2 vs reference step 1");
}

TEST(ToleranceTest, Fp32EquivalenceEdges) {
  const double tolerance = EquivalentTolerance("float32").value();
  EXPECT_EQ(tolerance, 1e-5);
  RunEvidence reference = Fp32Run(1, kLosses);
  for (const auto& [factor, expected] :
       std::vector<std::pair<double, Verdict>>{{1.0 + 0.99 * tolerance, Verdict::kPass},
                                               {1.0 - 0.99 * tolerance, Verdict::kPass},
                                               {1.0 + 1.01 * tolerance, Verdict::kFail},
                                               {1.0 - 1.01 * tolerance, Verdict::kFail}}) {
    RunEvidence run = Fp32Run(2, kLosses);
    run.losses[2].loss *= factor;
    const RunVerdict verdict = VerifyRun(reference, run);
    EXPECT_EQ(verdict.verdict, expected) << "factor " << factor << ": " << verdict.Label();
    ASSERT_TRUE(verdict.deviation);
    EXPECT_EQ(verdict.deviation->step_of_max, 2);
    EXPECT_NEAR(verdict.deviation->max_rel, std::fabs(factor - 1.0), 1e-12);
  }
}

TEST(ToleranceTest, TheLowerPrecisionOfThePairDecides) {
  EXPECT_EQ(LowerPrecisionDtype("float32", "bfloat16"), "bfloat16");
  EXPECT_EQ(LowerPrecisionDtype("bfloat16", "float32"), "bfloat16");
  EXPECT_EQ(LowerPrecisionDtype("float32", "float16"), "float16");
  EXPECT_EQ(LowerPrecisionDtype("float32", "float32"), "float32");
  EXPECT_LT(EquivalentTolerance("float32").value(), EquivalentTolerance("bfloat16").value());
  EXPECT_LT(EquivalentTolerance("bfloat16").value(), ApproximateTolerance("bfloat16").value());
  EXPECT_FALSE(EquivalentTolerance("int8"));
}

TEST(VerifyRunTest, MathPreservingStrategyChangeThatKeepsTheLossesPasses) {
  RunEvidence run = Fp32Run(2, kLosses);
  SetStrategy(run, "checkpointing", "full", true);
  const RunVerdict verdict = VerifyRun(Fp32Run(1, kLosses), run);
  EXPECT_EQ(verdict.verdict, Verdict::kPass);
  EXPECT_EQ(verdict.expectation, Expectation::kEquivalent);
  EXPECT_EQ(verdict.reason, "checkpointing: none -> full");
  EXPECT_TRUE(verdict.deviation->bitwise_equal);
  EXPECT_EQ(verdict.Label(), "pass");
}

TEST(VerifyRunTest, AccumulationAtEqualEffectiveBatchIsExpectedEquivalent) {
  RunEvidence run = Fp32Run(2, kLosses);
  SetStrategy(run, "batching", "default", true,
              {{"micro_batch_size", 1}, {"accumulation_steps", 4}});
  run.losses[3].loss *= 1.0 + 3e-7;  // summation order
  const RunVerdict verdict = VerifyRun(Fp32Run(1, kLosses), run);
  EXPECT_EQ(verdict.verdict, Verdict::kPass) << verdict.Label();
  EXPECT_EQ(verdict.reason,
            "batching/default: accumulation_steps 1 -> 4, micro_batch_size 4 -> 1");
}

TEST(VerifyRunTest, DifferentTokensPerStepAreAConfigurationDifference) {
  RunEvidence run = Fp32Run(2, kLosses);
  SetStrategy(run, "batching", "default", true, {{"micro_batch_size", 2}, {"accumulation_steps", 1}});
  run.tokens.assign(4, 64);  // half the effective batch
  const RunVerdict verdict = VerifyRun(Fp32Run(1, kLosses), run);
  EXPECT_EQ(verdict.verdict, Verdict::kDiffers);
  EXPECT_EQ(verdict.expectation, Expectation::kConfigDiffers);
  EXPECT_NE(verdict.reason.find("tokens per optimizer step differ (step 0: 64 vs 128)"),
            std::string::npos)
      << verdict.reason;
}

TEST(VerifyRunTest, BrokenMathPreservingClaimFails) {
  RunEvidence run = Fp32Run(2, kLosses);
  SetStrategy(run, "checkpointing", "full", true);
  run.losses[1].loss += 0.01;
  const RunVerdict verdict = VerifyRun(Fp32Run(1, kLosses), run);
  EXPECT_EQ(verdict.verdict, Verdict::kFail);
  EXPECT_EQ(verdict.deviation->step_of_max, 1);
  EXPECT_NEAR(verdict.deviation->max_abs, 0.01, 1e-12);
}

TEST(VerifyRunTest, NaNInAnExpectedEquivalentRunFails) {
  RunEvidence run = Fp32Run(2, kLosses);
  SetStrategy(run, "checkpointing", "full", true);
  run.losses[2].loss = kNaN;
  const RunVerdict verdict = VerifyRun(Fp32Run(1, kLosses), run);
  EXPECT_EQ(verdict.verdict, Verdict::kFail);
  EXPECT_EQ(verdict.deviation->max_rel, kInf);
  EXPECT_EQ(verdict.deviation->step_of_max, 2);
}

TEST(VerifyRunTest, Bf16GetsTheApproximateToleranceAndSaysItIsNotMathPreserving) {
  const double approximate = ApproximateTolerance("bfloat16").value();
  for (const auto& [deviation, expected] :
       std::vector<std::pair<double, Verdict>>{{0.5 * approximate, Verdict::kClose},
                                               {2.0 * approximate, Verdict::kDiffers}}) {
    RunEvidence run = Fp32Run(2, kLosses);
    SetStrategy(run, "precision", "bf16-autocast", false);
    run.compute_dtype = "bfloat16";
    run.losses[1].loss *= 1.0 + deviation;
    const RunVerdict verdict = VerifyRun(Fp32Run(1, kLosses), run);
    EXPECT_EQ(verdict.verdict, expected);
    EXPECT_EQ(verdict.expectation, Expectation::kNotMathPreserving);
    EXPECT_EQ(verdict.compute_dtype, "bfloat16");
    EXPECT_EQ(verdict.tolerance, approximate);
    EXPECT_EQ(verdict.reason, "precision: fp32 -> bf16-autocast (not math-preserving)");
    EXPECT_EQ(verdict.Label(), std::string(VerdictName(expected)) +
                                   " (bfloat16, not math-preserving)");
  }
}

TEST(VerifyRunTest, Bf16OnBothSidesIsExpectedEquivalentInBf16) {
  RunEvidence reference = Fp32Run(1, kLosses);
  SetStrategy(reference, "precision", "bf16-autocast", false);
  reference.compute_dtype = "bfloat16";
  RunEvidence run = reference;
  run.run_id = 2;
  SetStrategy(run, "checkpointing", "full", true);
  run.losses[0].loss *= 1.0 + 1e-3;
  const RunVerdict verdict = VerifyRun(reference, run);
  EXPECT_EQ(verdict.verdict, Verdict::kPass) << verdict.Label();
  EXPECT_EQ(verdict.tolerance, EquivalentTolerance("bfloat16"));
}

TEST(VerifyRunTest, ANonStrategyKeyIsAConfigurationDifference) {
  RunEvidence run = Fp32Run(2, kLosses);
  run.config["optimizer"]["lr"] = 0.001;
  const RunVerdict verdict = VerifyRun(Fp32Run(1, kLosses), run);  // same losses even
  EXPECT_EQ(verdict.verdict, Verdict::kDiffers);
  EXPECT_EQ(verdict.expectation, Expectation::kConfigDiffers);
  EXPECT_EQ(verdict.reason, "not a strategy change: optimizer.lr: 0.003 -> 0.001");
  EXPECT_EQ(verdict.Label(), "differs (config differs)");
}

TEST(VerifyRunTest, DeviceKeysAreNeutral) {
  RunEvidence run = Fp32Run(2, kLosses);
  run.config["device"]["memory_budget_bytes"] = 1 << 27;
  const RunVerdict verdict = VerifyRun(Fp32Run(1, kLosses), run);
  EXPECT_EQ(verdict.verdict, Verdict::kPass);
  EXPECT_EQ(verdict.reason, "device.memory_budget_bytes: 67108864 -> 134217728");
}

TEST(VerifyRunTest, TheDeviceTypeIsNotNeutral) {
  // CPU and CUDA kernels sum in different orders: no equivalence verdict across devices.
  RunEvidence reference = Fp32Run(1, kLosses);
  reference.config["device"]["type"] = "cpu";
  RunEvidence run = Fp32Run(2, kLosses);
  run.config["device"]["type"] = "cuda";
  const RunVerdict verdict = VerifyRun(reference, run);
  EXPECT_EQ(verdict.expectation, Expectation::kConfigDiffers);
  EXPECT_NE(verdict.reason.find("device.type: cpu -> cuda"), std::string::npos) << verdict.reason;
}

TEST(VerifyRunTest, NotComparableRunsAreNotApplicableWithAReason) {
  const RunEvidence reference = Fp32Run(1, kLosses);
  RunEvidence oom = Fp32Run(2, kLosses);
  oom.status = RunStatus::kOom;
  EXPECT_EQ(VerifyRun(reference, oom).Label(), "n/a (run status oom)");
  EXPECT_EQ(VerifyRun(oom, reference).Label(), "n/a (reference status oom)");

  RunEvidence other_seed = Fp32Run(2, kLosses);
  other_seed.seed = 43;
  EXPECT_EQ(VerifyRun(reference, other_seed).reason, "seed 43 vs reference 42");

  const RunEvidence shorter = Fp32Run(2, {6.25, 5.5});
  EXPECT_EQ(VerifyRun(reference, shorter).reason, "2 steps vs reference 4");

  RunEvidence old = Fp32Run(2, kLosses);
  old.compute_dtype = "";
  EXPECT_EQ(VerifyRun(reference, old).verdict, Verdict::kNotApplicable);
  RunEvidence no_flag = Fp32Run(2, kLosses);
  no_flag.plugins[0].math_preserving = std::nullopt;
  EXPECT_EQ(VerifyRun(reference, no_flag).verdict, Verdict::kNotApplicable);

  EXPECT_EQ(VerifyRun(reference, reference).verdict, Verdict::kReference);
}

TEST(ConfigDifferenceTest, CallbacksAreComparedAsAMultiset) {
  RunEvidence reference = Fp32Run(1, kLosses);
  RunEvidence run = Fp32Run(2, kLosses);
  run.config["strategies"].push_back(Strategy("callbacks", "empty_cache", {{"every", 10}}));
  run.plugins.push_back({"callbacks", "empty_cache", true});
  ConfigDifference d = DifferenceBetween(reference, run);
  EXPECT_TRUE(d.training.empty());
  EXPECT_TRUE(d.not_preserving.empty());
  ASSERT_EQ(d.preserving.size(), 1u);
  EXPECT_EQ(d.preserving[0], "callbacks: (none) -> empty_cache");

  run.plugins.back().math_preserving = false;
  d = DifferenceBetween(reference, run);
  ASSERT_EQ(d.not_preserving.size(), 1u);
  EXPECT_EQ(VerifyRun(reference, run).verdict, Verdict::kClose);
}

}  // namespace
}  // namespace memsweep::results
