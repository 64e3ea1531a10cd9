// What differs between two runs' resolved configurations, sorted by what it means for their loss
// trajectories (loss-equivalence verification, docs/results.md):
//   - training: a key that is no strategy and changes the math (optimizer, model, data ...);
//   - not_preserving: a slot whose plugin or parameters differ, where a plugin on either side
//     declares MathPreserving() == false;
//   - preserving: the same, with every plugin involved math-preserving;
//   - neutral: keys that never change the math (the device budget, threads, GEMM library, the
//     experiment name, warm-up steps).
// Each entry reads like "optimizer.lr: 0.003 -> 0.001" or "checkpointing: none -> full".
//
//   ConfigDifference d = DifferenceBetween(reference, run);
//   bool expected_equal = d.training.empty() && d.not_preserving.empty();
#pragma once

#include <string>
#include <vector>

#include "core/results/loss_verification.h"

namespace memsweep::results {

struct ConfigDifference {
  std::vector<std::string> training;
  std::vector<std::string> not_preserving;
  std::vector<std::string> preserving;
  std::vector<std::string> neutral;
};

// Seed and step count are not looked at here (VerifyRun checks them first).
ConfigDifference DifferenceBetween(const RunEvidence& reference, const RunEvidence& run);

}  // namespace memsweep::results
