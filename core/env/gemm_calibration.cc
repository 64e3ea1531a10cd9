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
#include <sstream>
#include <tuple>
#include <unistd.h>
#include <cctype>

#include "core/env/cache_dir.h"
#include "core/env/cpu_gemm.h"
#include "core/env/cuda_probe.h"
#include "core/env/environment.h"

namespace memsweep::env {
namespace {

// How the figure was measured, in the file name: a change of method measures afresh instead of
// reading a figure taken the old way (until 2026-11: CPU 1536³ only, files without a suffix).
constexpr const char* kMethod = ".calibration-2";

void Synchronize(const c10::Device& device) {
  if (!device.is_cpu()) {
    c10::impl::getDeviceGuardImpl(device.type())->synchronizeDevice(device.index());
  }
}

// What the figure depends on besides the dtype: the GPU model, or on the CPU the processor, the
// ATen kernel level, the thread count and the GEMM paths in force. "" when unknown.
std::string MachineKey(c10::ScalarType dtype, const c10::Device& device) {
  if (device.is_cpu()) {
    std::string key = CpuModelName() + ".cap-" + at::get_cpu_capability() + ".threads-" +
                      std::to_string(at::get_num_threads());
    if (dtype == at::kBFloat16) key += std::string(".bf16-") + Bf16GemmName(ActiveBf16Gemm());
    // oneDNN's fp32 products (which bf16's upcast path also runs through); MKL's keep the
    // key they always had.
    if (ActiveFp32Gemm() == Fp32Gemm::kOnednn) key += ".fp32-onednn";
    return key;
  }
  const CudaProbe& probe = ProbeCuda();
  const size_t index = device.has_index() ? static_cast<size_t>(device.index()) : 0;
  if (index >= probe.devices.size() || probe.devices[index].name.empty()) return "";
  return probe.devices[index].name;
}

// The file that keeps this machine's figure for one dtype, or "" when there is none to use.
std::string CacheFile(c10::ScalarType dtype, const c10::Device& device) {
  std::string machine = MachineKey(dtype, device);
  if (machine.empty()) return "";
  for (char& c : machine) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '-';
  }
  const std::filesystem::path dir = CacheDir("gemm");
  if (dir.empty()) return "";
  return (dir / (machine + "." + c10::toString(dtype) + ".torch-" + TORCH_VERSION + kMethod))
      .string();
}

}  // namespace

double MeasureGemmPeakFlops(c10::ScalarType dtype, const GemmCalibrationOptions& options,
                            const c10::Device& device) {
  const auto on_device = at::TensorOptions().device(device);
  double best_flops = 0.0;
  for (const int64_t n : options.sizes) {
    // A path so slow that one multiply of the last size took over a second (LibTorch's generic
    // bf16 GEMM on an AVX2 CPU: ~2 GFLOP/s) is nowhere near a peak a larger size would find.
    if (best_flops > 0.0 && 2.0 * static_cast<double>(n) * n * n / best_flops > 2.0) break;
    at::Tensor a = at::randn({n, n}, on_device).to(dtype);
    at::Tensor b = at::randn({n, n}, on_device).to(dtype);
    at::Tensor c = at::mm(a, b);  // warm-up: thread pool, packing buffers, cuBLAS handles
    Synchronize(device);
    for (int i = 0; i < options.repeats; ++i) {
      const auto start = std::chrono::steady_clock::now();
      at::mm_out(c, a, b);
      Synchronize(device);
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      best_flops = std::max(best_flops, 2.0 * static_cast<double>(n) * n * n / elapsed.count());
    }
  }
  return best_flops;
}

double CachedGemmPeakFlops(c10::ScalarType dtype, const c10::Device& device) {
  static std::mutex mutex;
  static std::map<std::string, double> cache;
  const std::string file = CacheFile(dtype, device);
  const std::string key = file.empty() ? MachineKey(dtype, device) + c10::toString(dtype) + device.str()
                                       : file;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  double flops = 0.0;
  if (!file.empty()) std::ifstream(file) >> flops;
  if (!(flops > 0.0)) {
    flops = device.is_cpu()
                ? MeasureGemmPeakFlops(dtype, {}, device)
                : MeasureGemmPeakFlops(dtype, GemmCalibrationOptions{{4096}, 10}, device);
    if (!file.empty()) {
      std::ostringstream text;
      text << flops << "\n";
      WriteCacheFile(file, text.str());
    }
  }
  return cache.emplace(key, flops).first->second;
}

}  // namespace memsweep::env
