#include "core/env/gemm_calibration.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <tuple>
#include <unistd.h>
#include <cctype>

#include "core/env/cuda_probe.h"

namespace memsweep::env {
namespace {

void Synchronize(const c10::Device& device) {
  if (!device.is_cpu()) {
    c10::impl::getDeviceGuardImpl(device.type())->synchronizeDevice(device.index());
  }
}

// The file that keeps a GPU model's figure for one dtype, or "" when the GPU is not known.
std::string CacheFile(c10::ScalarType dtype, const c10::Device& device) {
  const CudaProbe& probe = ProbeCuda();
  const size_t index = device.has_index() ? static_cast<size_t>(device.index()) : 0;
  if (index >= probe.devices.size() || probe.devices[index].name.empty()) return "";
  std::string model = probe.devices[index].name;
  for (char& c : model) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '-';
  }
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if ((xdg == nullptr || *xdg == '\0') && home == nullptr) return "";
  const std::filesystem::path root = (xdg != nullptr && *xdg != '\0')
                                         ? std::filesystem::path(xdg)
                                         : std::filesystem::path(home) / ".cache";
  return (root / "memsweep" / "gemm" /
          (model + "." + c10::toString(dtype) + ".torch-" + TORCH_VERSION))
      .string();
}

}  // namespace

double MeasureGemmPeakFlops(c10::ScalarType dtype, const GemmCalibrationOptions& options,
                            const c10::Device& device) {
  const int64_t n = options.size;
  const auto on_device = at::TensorOptions().device(device);
  at::Tensor a = at::randn({n, n}, on_device).to(dtype);
  at::Tensor b = at::randn({n, n}, on_device).to(dtype);
  at::Tensor c = at::mm(a, b);  // warm-up: thread pool, packing buffers, cuBLAS handles
  Synchronize(device);
  double best_seconds = 1e30;
  for (int i = 0; i < options.repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    at::mm_out(c, a, b);
    Synchronize(device);
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    best_seconds = std::min(best_seconds, elapsed.count());
  }
  return 2.0 * static_cast<double>(n) * n * n / best_seconds;
}

double CachedGemmPeakFlops(c10::ScalarType dtype, const c10::Device& device) {
  static std::mutex mutex;
  static std::map<std::tuple<int, int, std::string>, double> cache;
  const auto key = std::make_tuple(static_cast<int>(dtype),
                                   device.is_cpu() ? at::get_num_threads() : 0, device.str());
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  double flops = 0.0;
  if (device.is_cpu()) {
    flops = MeasureGemmPeakFlops(dtype, {}, device);
  } else {
    const std::string file = CacheFile(dtype, device);
    if (!file.empty()) std::ifstream(file) >> flops;
    if (!(flops > 0.0)) {
      flops = MeasureGemmPeakFlops(dtype, GemmCalibrationOptions{4096, 10}, device);
      if (!file.empty()) {
        std::error_code ignored;
        std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ignored);
        const std::string temporary = file + ".tmp" + std::to_string(::getpid());
        std::ofstream(temporary) << flops << "\n";
        std::filesystem::rename(temporary, file, ignored);
      }
    }
  }
  return cache.emplace(key, flops).first->second;
}

}  // namespace memsweep::env
