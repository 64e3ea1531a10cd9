#include "core/sdk/adamw_kernel.h"

namespace memsweep::adamw {

// Compiled with -fno-math-errno (v ≥ 0 needs no errno; core/CMakeLists.txt), so it vectorises.
void UpdateRange(float* __restrict p, const float* __restrict grad, float* __restrict exp_avg,
                 float* __restrict exp_avg_sq, int64_t n, const Coefficients c) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    const float m = exp_avg[i] * c.b1 + g * c.g1;
    const float v = exp_avg_sq[i] * c.b2 + g * g * c.g2;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    p[i] = p[i] * c.decay + c.step_size * (m / (__builtin_sqrtf(v) * c.inv_sqrt_bias2 + c.eps));
  }
}

}  // namespace memsweep::adamw
