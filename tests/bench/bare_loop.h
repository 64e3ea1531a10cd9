// The reference for memsweep's loop overhead: the same model, batches, loss and schedule driven
// by a plain LibTorch loop (torch::optim::AdamW, clip_grad_norm_) on LibTorch's own CPU
// allocator, with no stages, probes or accounting. With bf16_autocast, forward and loss run under
// LibTorch's CPU autocast in bf16, as precision/bf16-autocast does.
#pragma once

#include <vector>

#include "core/config/run_config.h"

namespace memsweep::bench {

struct BareLoopResult {
  std::vector<double> step_seconds;
  std::vector<double> losses;
};

BareLoopResult RunBareLoop(const config::RunConfig& cfg, bool bf16_autocast = false);

}  // namespace memsweep::bench
