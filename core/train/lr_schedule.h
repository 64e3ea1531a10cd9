// Learning-rate schedule: linear warm-up from 0 to the peak, then cosine decay to
// peak·min_lr_ratio at the last step.
//
//   LrSchedule schedule{.peak = 3e-4, .warmup_steps = 10, .total_steps = 200};
//   double lr = schedule.At(step);   // step counts from 0
#pragma once

#include <cstdint>

namespace memsweep::train {

struct LrSchedule {
  double peak = 1e-3;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  double min_lr_ratio = 0.1;

  double At(int64_t step) const;
};

}  // namespace memsweep::train
