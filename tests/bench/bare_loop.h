// The reference for memsweep's loop overhead: the same model, batches, loss and schedule driven
// by a plain LibTorch loop (torch::optim::AdamW, clip_grad_norm_) on LibTorch's own CPU
// allocator, with no stages, probes or accounting.
#pragma once

#include <vector>

#include "core/config/run_config.h"

namespace memsweep::bench {

struct BareLoopResult {
  std::vector<double> step_seconds;
  std::vector<double> losses;
};

BareLoopResult RunBareLoop(const config::RunConfig& cfg);

}  // namespace memsweep::bench
