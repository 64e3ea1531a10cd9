#include "core/env/gemm_calibration.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>

namespace memsweep::env {

double MeasureGemmPeakFlops(c10::ScalarType dtype, const GemmCalibrationOptions& options) {
  const int64_t n = options.size;
  at::Tensor a = at::randn({n, n}).to(dtype);
  at::Tensor b = at::randn({n, n}).to(dtype);
  at::Tensor c = at::mm(a, b);  // warm-up: thread pool, packing buffers
  double best_seconds = 1e30;
  for (int i = 0; i < options.repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    at::mm_out(c, a, b);
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    best_seconds = std::min(best_seconds, elapsed.count());
  }
  return 2.0 * static_cast<double>(n) * n * n / best_seconds;
}

}  // namespace memsweep::env
