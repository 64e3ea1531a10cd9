// GEMM calibration: the achievable matrix-multiply FLOP/s of this machine for one dtype, measured
// in a fraction of a second. MFU is reported against this measured figure (docs/metrics.md).
//
//   double peak = MeasureGemmPeakFlops(at::kFloat);   // e.g. 4.1e11 on 2 AVX-512 cores
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>

namespace memsweep::env {

struct GemmCalibrationOptions {
  int64_t size = 1536;  // square matrices: 2·size³ FLOPs per multiply
  int repeats = 4;      // best of this many timed multiplies, after one warm-up
};

// Best observed FLOP/s of at::mm on size×size matrices of `dtype` on `device` (timed with the
// device synchronised around each multiply).
double MeasureGemmPeakFlops(c10::ScalarType dtype, const GemmCalibrationOptions& options = {},
                            const c10::Device& device = c10::Device(c10::kCPU));

// MeasureGemmPeakFlops with default options, measured once per (dtype, thread count) in this
// process and then reused. On a CUDA device (size 4096, 10 repeats) the figure is also kept in
// a file per GPU model and dtype under ${XDG_CACHE_HOME:-~/.cache}/memsweep/gemm/, so each cell's
// worker reads it instead of measuring again.
double CachedGemmPeakFlops(c10::ScalarType dtype,
                           const c10::Device& device = c10::Device(c10::kCPU));

}  // namespace memsweep::env
