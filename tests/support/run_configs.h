// Run configurations for tests: the tiny model on the bundled corpus, small and fast, resolved
// through the experiment-file path (so the built-in plugins fill every slot).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/config/run_config_loader.h"
#include "core/config/strategy_resolver.h"
#include "core/train/trainer.h"
#include "support/tolerances.h"

namespace memsweep::testing_support {

inline std::string SourcePath(const std::string& relative) {
  return std::string(MEMSWEEP_SOURCE_DIR) + "/" + relative;
}

// `overrides` are --set style assignments, e.g. "strategies.batching.micro_batch_size=8".
inline config::RunConfig TinyRun(int64_t steps = 6, std::vector<std::string> overrides = {},
                                 config::ReadFor purpose = config::ReadFor::kRun) {
  const std::string text =
      "[experiment]\nname = \"test\"\nsteps = " + std::to_string(steps) +
      "\nwarmup_steps = 1\nseed = 42\n"
      "[model]\npreset = \"tiny\"\n"
      "[data]\npath = \"data/devils-dictionary.jsonl\"\n"
      "[optimizer]\nlr = 3e-3\nlr_warmup_steps = 1\n"
      "[device]\nthreads = 2\n"
      "[strategies.batching]\nseq_len = 64\nmicro_batch_size = 4\n";
  return config::ParseRunConfig(text, SourcePath("experiments/test.toml"), overrides, purpose);
}

// The per-step losses of a run, for trajectory comparisons.
inline std::vector<double> Losses(const train::RunResult& result) {
  std::vector<double> losses;
  for (const auto& step : result.steps) losses.push_back(step.loss);
  return losses;
}

// The rounding path of one optimizer step of `cfg` (LlamaStepPathTerms): its model, its rows'
// length and the tokens of a step (rows × accumulation, padding included: an upper bound).
inline int64_t StepPathTerms(const config::RunConfig& cfg) {
  const data::DataConfig& data = cfg.data;  // as validation's batching strategy configured it
  return LlamaStepPathTerms(cfg.model.llama, data.seq_len,
                            data.seq_len * data.micro_batch_size * data.accumulation_steps);
}

// Two fp32 runs of `cfg`'s shape that do the same arithmetic in another order follow each other:
// step i within TrajectoryTolerance(i, the larger run's StepPathTerms, u32) relative.
inline void ExpectSameTrajectory(const std::vector<double>& actual,
                                 const std::vector<double>& expected, int64_t step_path_terms,
                                 const std::string& what = "") {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double rel = TrajectoryTolerance(static_cast<int64_t>(i), step_path_terms, kFp32Roundoff);
    const double deviation = std::abs(actual[i] - expected[i]) / std::abs(expected[i]);
    worst = std::max(worst, deviation / rel);
    EXPECT_LE(deviation, rel) << what << " step " << i << ": " << actual[i] << " vs "
                              << expected[i] << ", relative tolerance " << rel;
  }
  std::printf("%s largest relative deviation / tolerance: %.3g\n", what.c_str(), worst);
}

inline train::RunResult Train(const config::RunConfig& cfg) {
  return train::Trainer(cfg, config::InstantiateStrategies(cfg)).Run();
}

}  // namespace memsweep::testing_support
