#include "core/env/gemm_calibration.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <ATen/Parallel.h>

#include <chrono>
#include <map>
#include <mutex>
#include <tuple>


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

double CachedGemmPeakFlops(c10::ScalarType dtype) {
  static std::mutex mutex;
  static std::map<std::tuple<int, int>, double> cache;
  const auto key = std::make_tuple(static_cast<int>(dtype), at::get_num_threads());
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, MeasureGemmPeakFlops(dtype)).first;
  return it->second;
}

}  // namespace memsweep::env
