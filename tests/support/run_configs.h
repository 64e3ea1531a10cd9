// Run configurations for tests: the tiny model on the bundled corpus, small and fast.
#pragma once

#include <string>

#include "core/config/run_config.h"

namespace memsweep::testing_support {

inline std::string SourcePath(const std::string& relative) {
  return std::string(MEMSWEEP_SOURCE_DIR) + "/" + relative;
}

inline config::RunConfig TinyRun(int64_t steps = 6) {
  config::RunConfig cfg;
  cfg.experiment.name = "test";
  cfg.experiment.steps = steps;
  cfg.experiment.warmup_steps = 1;
  cfg.experiment.seed = 42;
  cfg.model.preset = "tiny";
  cfg.model.llama = *model::LlamaPreset("tiny");
  cfg.data.path = SourcePath("experiments/data/devils-dictionary.jsonl");
  cfg.data.seq_len = 64;
  cfg.data.micro_batch_size = 4;
  cfg.data.accumulation_steps = 1;
  cfg.optimizer.lr = 3e-3;
  cfg.optimizer.lr_warmup_steps = 1;
  cfg.device.threads = 2;
  return cfg;
}

}  // namespace memsweep::testing_support
