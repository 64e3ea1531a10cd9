// Loss-equivalence verification: is a run's per-step loss trajectory the one its reference run
// produced, as far as the strategies that differ between them promise? The rules, verdicts and
// tolerances are documented in docs/results.md ("Loss-equivalence verification").
//
//   RunEvidence reference = ..., run = ...;   // verification_store.h loads them from the db
//   RunVerdict verdict = VerifyRun(reference, run);
//   verdict.verdict == Verdict::kPass;         // expected equivalent, within the tolerance
//
// Pure functions: no database, no training; the unit tests feed synthetic trajectories.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/results/run_status.h"

namespace memsweep::results {

enum class Verdict : uint8_t {
  kReference,      // the reference run itself
  kPass,           // expected equivalent, deviation within the tight tolerance of its dtype
  kFail,           // expected equivalent, deviation beyond it: a strategy broke the math
  kClose,          // not math-preserving, deviation within the dtype's approximate tolerance
  kDiffers,        // not math-preserving beyond that tolerance, or not a strategy change at all
  kNotApplicable,  // not comparable (status, seed, step count, missing records): see the reason
};
const char* VerdictName(Verdict verdict);  // "reference", "pass", "fail", "close", "differs", "n/a"

// What the differences between the two runs lead one to expect of the losses.
enum class Expectation : uint8_t {
  kEquivalent,         // only math-preserving strategies differ (or nothing that matters)
  kNotMathPreserving,  // a strategy that differs declares MathPreserving() == false
  kConfigDiffers,      // a training key that is no strategy differs (lr, model, data ...)
};
const char* ExpectationName(Expectation expectation);
// The inverses, for verdicts read back from the database.
std::optional<Verdict> ParseVerdict(const std::string& name);
std::optional<Expectation> ParseExpectation(const std::string& name);

struct StepLoss {
  int64_t step = 0;
  double loss = 0.0;  // NaN when the run recorded none (SQLite stores NaN as NULL)
};

// The largest per-step difference between two trajectories over the same steps.
struct TrajectoryDeviation {
  int64_t steps_compared = 0;
  double max_abs = 0.0;  // max |loss - reference loss|; +inf when only one side is finite
  double max_rel = 0.0;  // max |loss - reference loss| / |reference loss|
  int64_t step_of_max = -1;  // the step with the largest relative deviation (-1: none)
  bool bitwise_equal = true;  // every loss identical (two NaNs count as identical)
  std::optional<std::string> problem;  // set when the step numbers differ: nothing compared
};

// Compares step by step. Two identical values (also two NaNs or two equal infinities) deviate by
// 0; a finite value against a non-finite one by +inf; a reference loss of 0 gives a relative
// deviation of +inf unless the other is 0 too.
TrajectoryDeviation CompareTrajectories(const std::vector<StepLoss>& reference,
                                        const std::vector<StepLoss>& candidate);

// The relative tolerance on the per-step loss for runs whose strategies are all math-preserving
// (Expectation::kEquivalent) and for runs with a strategy that is not (kNotMathPreserving), by
// the compute dtype ("float32", "bfloat16", "float16", "float64"); nullopt for an unknown dtype.
std::optional<double> EquivalentTolerance(const std::string& dtype);
std::optional<double> ApproximateTolerance(const std::string& dtype);
// Of two compute dtypes, the one with fewer mantissa bits (its tolerance applies to the pair).
std::string LowerPrecisionDtype(const std::string& a, const std::string& b);

// A plugin as the run used it.
struct PluginFlag {
  std::string slot;
  std::string name;
  std::optional<bool> math_preserving;  // nullopt: recorded by a memsweep without the flag
};

// Everything verification needs to know of one run.
struct RunEvidence {
  int64_t run_id = 0;
  RunStatus status = RunStatus::kPending;
  std::optional<int64_t> seed;
  std::string compute_dtype;  // "" when not recorded
  nlohmann::json config;      // the resolved configuration (result "config"); null if none
  std::vector<PluginFlag> plugins;
  std::vector<StepLoss> losses;
  std::vector<int64_t> tokens;  // real target tokens per step, in step order
};

struct RunVerdict {
  Verdict verdict = Verdict::kNotApplicable;
  std::optional<Expectation> expectation;
  std::string reason;         // what differs, or why there is no verdict
  std::string compute_dtype;  // the dtype whose tolerance applies
  std::optional<double> tolerance;
  std::optional<TrajectoryDeviation> deviation;

  // "differs (bfloat16, not math-preserving)", "pass", "n/a (status oom)": for tables.
  std::string Label() const;
};

RunVerdict VerifyRun(const RunEvidence& reference, const RunEvidence& run);

}  // namespace memsweep::results
