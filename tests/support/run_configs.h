// Run configurations for tests: the tiny model on the bundled corpus, small and fast, resolved
// through the experiment-file path (so the built-in plugins fill every slot).
#pragma once

#include <string>
#include <vector>

#include "core/config/run_config_loader.h"
#include "core/config/strategy_resolver.h"
#include "core/train/trainer.h"

namespace memsweep::testing_support {

inline std::string SourcePath(const std::string& relative) {
  return std::string(MEMSWEEP_SOURCE_DIR) + "/" + relative;
}

// `overrides` are --set style assignments, e.g. "strategies.batching.micro_batch_size=8".
inline config::RunConfig TinyRun(int64_t steps = 6, std::vector<std::string> overrides = {}) {
  const std::string text =
      "[experiment]\nname = \"test\"\nsteps = " + std::to_string(steps) +
      "\nwarmup_steps = 1\nseed = 42\n"
      "[model]\npreset = \"tiny\"\n"
      "[data]\npath = \"data/devils-dictionary.jsonl\"\n"
      "[optimizer]\nlr = 3e-3\nlr_warmup_steps = 1\n"
      "[device]\nthreads = 2\n"
      "[strategies.batching]\nseq_len = 64\nmicro_batch_size = 4\n";
  return config::ParseRunConfig(text, SourcePath("experiments/test.toml"), overrides);
}

// The per-step losses of a run, for trajectory comparisons.
inline std::vector<double> Losses(const train::RunResult& result) {
  std::vector<double> losses;
  for (const auto& step : result.steps) losses.push_back(step.loss);
  return losses;
}

inline train::RunResult Train(const config::RunConfig& cfg) {
  return train::Trainer(cfg, config::InstantiateStrategies(cfg)).Run();
}

}  // namespace memsweep::testing_support
