// Driving an optimizer plugin's update in tests: the hyperparameters of a test step, and what one
// Step adds at its highest above the bytes held before it (the tracking allocator's window).
#pragma once

#include <cstdint>

#include "core/memory/tracking_allocator.h"
#include "memsweep/optimizer.h"

namespace memsweep::testing_support {

// lr 1e-2, betas 0.9 / 0.999, eps 1e-8, weight decay 0.1: every term of the update non-zero.
inline OptimizerStepSpec OptimizerTestSpec(int64_t step) {
  OptimizerStepSpec spec;
  spec.lr = 1e-2;
  spec.beta1 = 0.9;
  spec.beta2 = 0.999;
  spec.eps = 1e-8;
  spec.weight_decay = 0.1;
  spec.step = step;
  return spec;
}

// The peak one optimizer.Step(spec) reaches above the bytes allocated before it.
template <typename AnOptimizer>
int64_t StepPeakRise(AnOptimizer& optimizer, const OptimizerStepSpec& spec) {
  memory::TrackingAllocator& tracker = memory::TrackingAllocator::Instance();
  const int64_t before = tracker.AllocatedBytes();
  tracker.ResetWindowPeak();
  optimizer.Step(spec);
  return tracker.WindowPeakBytes() - before;
}

}  // namespace memsweep::testing_support
