#include "core/results/loss_verification.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/results/config_difference.h"

namespace memsweep::results {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Per-step relative tolerances (docs/results.md, "Tolerances"). Equivalent runs in fp32 differ
// only by summation order (different micro-batch shapes, thread counts): 1e-5 is the goal the
// accumulation test holds (measured: ~1e-7). A reduced-precision pair is held to about half a
// unit in the last place of its format (bf16: 2^-9 ~ 2e-3, fp16: 2^-11 ~ 5e-4; measured for bf16
// accumulation: ~1.4e-4 over 30 tiny steps); "approximately the same training" to 1% (measured
// for bf16 autocast against fp32: ~2.3e-4).
struct DtypeTolerances {
  const char* dtype;
  int mantissa_bits;
  double equivalent;
  double approximate;
};
constexpr DtypeTolerances kTolerances[] = {
    {"float64", 52, 1e-9, 1e-2},
    {"float32", 23, 1e-5, 1e-2},
    {"float16", 10, 5e-4, 1e-2},
    {"bfloat16", 7, 2e-3, 1e-2},
};

const DtypeTolerances* Find(const std::string& dtype) {
  for (const DtypeTolerances& t : kTolerances) {
    if (dtype == t.dtype) return &t;
  }
  return nullptr;
}

bool Identical(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b;
}

// |candidate - reference| and that relative to |reference|, with the conventions of
// CompareTrajectories for non-finite values and a zero reference.
std::pair<double, double> Deviation(double reference, double candidate) {
  if (Identical(reference, candidate)) return {0.0, 0.0};
  if (!std::isfinite(reference) || !std::isfinite(candidate)) return {kInfinity, kInfinity};
  const double absolute = std::fabs(candidate - reference);
  const double relative = reference == 0.0 ? kInfinity : absolute / std::fabs(reference);
  return {absolute, relative};
}

std::string StatusProblem(const RunEvidence& run, const char* whose) {
  return std::string(whose) + " status " + RunStatusName(run.status);
}

RunVerdict NotApplicable(std::string reason) {
  RunVerdict verdict;
  verdict.reason = std::move(reason);
  return verdict;
}

int64_t ConfiguredSteps(const RunEvidence& run) {
  const nlohmann::json* steps = run.config.is_object() && run.config.contains("experiment")
                                    ? &run.config["experiment"]
                                    : nullptr;
  if (steps == nullptr || !steps->contains("steps") || !(*steps)["steps"].is_number_integer()) {
    return -1;
  }
  return (*steps)["steps"].get<int64_t>();
}

// Why the two runs cannot be compared at all, or nullopt.
std::optional<std::string> NotComparable(const RunEvidence& reference, const RunEvidence& run) {
  if (reference.status != RunStatus::kOk) return StatusProblem(reference, "reference");
  if (run.status != RunStatus::kOk) return StatusProblem(run, "run");
  if (run.compute_dtype.empty() || reference.compute_dtype.empty() || run.config.is_null() ||
      reference.config.is_null()) {
    return std::string("recorded without math-preserving flags (older memsweep); run it again");
  }
  for (const RunEvidence* side : {&reference, &run}) {
    for (const PluginFlag& plugin : side->plugins) {
      if (!plugin.math_preserving) return std::string("a plugin's math-preserving flag is missing");
    }
  }
  if (run.seed != reference.seed) {
    return "seed " + (run.seed ? std::to_string(*run.seed) : std::string("?")) +
           " vs reference " + (reference.seed ? std::to_string(*reference.seed) : "?");
  }
  const int64_t steps = static_cast<int64_t>(run.losses.size());
  const int64_t reference_steps = static_cast<int64_t>(reference.losses.size());
  if (steps != reference_steps || ConfiguredSteps(run) != ConfiguredSteps(reference)) {
    return std::to_string(steps) + " steps vs reference " + std::to_string(reference_steps);
  }
  if (steps == 0) return std::string("no steps recorded");
  return std::nullopt;
}

// The first step whose real-token count differs: the runs did not see the same batches.
std::optional<std::string> TokenDifference(const RunEvidence& reference, const RunEvidence& run) {
  if (reference.tokens.size() != run.tokens.size()) return "tokens per step not recorded alike";
  for (size_t i = 0; i < run.tokens.size(); ++i) {
    if (run.tokens[i] == reference.tokens[i]) continue;
    return "tokens per optimizer step differ (step " + std::to_string(i) + ": " +
           std::to_string(run.tokens[i]) + " vs " + std::to_string(reference.tokens[i]) +
           "): effective batch or data differ";
  }
  return std::nullopt;
}

std::string JoinDifferences(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : "; ") + item;
  return out;
}

}  // namespace

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kReference: return "reference";
    case Verdict::kPass: return "pass";
    case Verdict::kFail: return "fail";
    case Verdict::kClose: return "close";
    case Verdict::kDiffers: return "differs";
    case Verdict::kNotApplicable: return "n/a";
  }
  return "n/a";
}

const char* ExpectationName(Expectation expectation) {
  switch (expectation) {
    case Expectation::kEquivalent: return "equivalent";
    case Expectation::kNotMathPreserving: return "not math-preserving";
    case Expectation::kConfigDiffers: return "config differs";
  }
  return "";
}

std::optional<Verdict> ParseVerdict(const std::string& name) {
  for (Verdict v : {Verdict::kReference, Verdict::kPass, Verdict::kFail, Verdict::kClose,
                    Verdict::kDiffers, Verdict::kNotApplicable}) {
    if (name == VerdictName(v)) return v;
  }
  return std::nullopt;
}

std::optional<Expectation> ParseExpectation(const std::string& name) {
  for (Expectation e :
       {Expectation::kEquivalent, Expectation::kNotMathPreserving, Expectation::kConfigDiffers}) {
    if (name == ExpectationName(e)) return e;
  }
  return std::nullopt;
}

TrajectoryDeviation CompareTrajectories(const std::vector<StepLoss>& reference,
                                        const std::vector<StepLoss>& candidate) {
  TrajectoryDeviation result;
  if (reference.size() != candidate.size()) {
    result.problem = std::to_string(candidate.size()) + " steps vs reference " +
                     std::to_string(reference.size());
    result.bitwise_equal = false;
    return result;
  }
  for (size_t i = 0; i < reference.size(); ++i) {
    if (reference[i].step != candidate[i].step) {
      result = TrajectoryDeviation();
      result.problem = "step " + std::to_string(candidate[i].step) + " vs reference step " +
                       std::to_string(reference[i].step);
      result.bitwise_equal = false;
      return result;
    }
    const auto [absolute, relative] = Deviation(reference[i].loss, candidate[i].loss);
    result.bitwise_equal = result.bitwise_equal && Identical(reference[i].loss, candidate[i].loss);
    result.max_abs = std::max(result.max_abs, absolute);
    if (result.step_of_max < 0 || relative > result.max_rel) {
      result.max_rel = relative;
      result.step_of_max = reference[i].step;
    }
    ++result.steps_compared;
  }
  return result;
}

std::optional<double> EquivalentTolerance(const std::string& dtype) {
  const DtypeTolerances* t = Find(dtype);
  if (t == nullptr) return std::nullopt;
  return t->equivalent;
}

std::optional<double> ApproximateTolerance(const std::string& dtype) {
  const DtypeTolerances* t = Find(dtype);
  if (t == nullptr) return std::nullopt;
  return t->approximate;
}

std::string LowerPrecisionDtype(const std::string& a, const std::string& b) {
  const DtypeTolerances* ta = Find(a);
  const DtypeTolerances* tb = Find(b);
  if (ta == nullptr) return a;  // unknown: no tolerance, which VerifyRun reports
  if (tb == nullptr) return b;
  return ta->mantissa_bits <= tb->mantissa_bits ? a : b;
}

std::string RunVerdict::Label() const {
  const std::string name = VerdictName(verdict);
  if (verdict == Verdict::kNotApplicable) return name + " (" + reason + ")";
  if (!expectation || *expectation == Expectation::kEquivalent) return name;
  if (*expectation == Expectation::kConfigDiffers) return name + " (config differs)";
  return name + " (" + compute_dtype + ", not math-preserving)";
}

RunVerdict VerifyRun(const RunEvidence& reference, const RunEvidence& run) {
  if (run.run_id == reference.run_id) {
    RunVerdict verdict;
    verdict.verdict = Verdict::kReference;
    verdict.reason = "the reference run";
    verdict.compute_dtype = run.compute_dtype;
    return verdict;
  }
  if (auto problem = NotComparable(reference, run)) return NotApplicable(*problem);

  RunVerdict verdict;
  verdict.compute_dtype = LowerPrecisionDtype(reference.compute_dtype, run.compute_dtype);
  TrajectoryDeviation deviation = CompareTrajectories(reference.losses, run.losses);
  if (deviation.problem) return NotApplicable(*deviation.problem);
  verdict.deviation = deviation;

  ConfigDifference difference = DifferenceBetween(reference, run);
  if (auto tokens = TokenDifference(reference, run)) difference.training.push_back(*tokens);
  if (!difference.training.empty()) {
    verdict.expectation = Expectation::kConfigDiffers;
    verdict.verdict = Verdict::kDiffers;
    verdict.reason = "not a strategy change: " + JoinDifferences(difference.training);
    return verdict;
  }

  const bool preserving = difference.not_preserving.empty();
  verdict.expectation = preserving ? Expectation::kEquivalent : Expectation::kNotMathPreserving;
  verdict.tolerance = preserving ? EquivalentTolerance(verdict.compute_dtype)
                                 : ApproximateTolerance(verdict.compute_dtype);
  std::vector<std::string> described = difference.not_preserving;
  described.insert(described.end(), difference.preserving.begin(), difference.preserving.end());
  described.insert(described.end(), difference.neutral.begin(), difference.neutral.end());
  verdict.reason = described.empty() ? "same configuration" : JoinDifferences(described);
  if (!verdict.tolerance) {
    return NotApplicable("no tolerance for compute dtype '" + verdict.compute_dtype + "'");
  }
  const bool within = deviation.max_rel <= *verdict.tolerance;
  if (preserving) {
    verdict.verdict = within ? Verdict::kPass : Verdict::kFail;
  } else {
    verdict.verdict = within ? Verdict::kClose : Verdict::kDiffers;
  }
  return verdict;
}

}  // namespace memsweep::results
