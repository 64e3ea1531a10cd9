// The fused AdamW loop over plain fp32 arrays: the inner kernel of memsweep::AdamWUpdate
// (adamw_update.cc). A header and file of its own, free of LibTorch, because the kernel is
// compiled with -fno-math-errno (so the square root vectorises) and a file with its own
// predefined macros cannot use the tree's precompiled LibTorch header.
#pragma once

#include <cstdint>

namespace memsweep::adamw {

// The update's scalars, already rounded to fp32 as LibTorch rounds a Scalar for an fp32 op.
struct Coefficients {
  float decay, b1, g1, b2, g2, inv_sqrt_bias2, eps, step_size;
};

// n elements of the update, in place on p, exp_avg and exp_avg_sq. The arrays must not overlap.
void UpdateRange(float* __restrict p, const float* __restrict grad, float* __restrict exp_avg,
                 float* __restrict exp_avg_sq, int64_t n, const Coefficients c);

}  // namespace memsweep::adamw
