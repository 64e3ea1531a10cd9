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
#include <cstring>
#include <ctime>
#include <iomanip>
#include <optional>
#include <sys/resource.h>

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

// When the figure was measured, in UTC.
std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// The 1-minute load average, or -1.
double LoadAverage() {
  double load = -1.0;
  std::ifstream in("/proc/loadavg");
  if (!(in >> load)) return -1.0;
  return load;
}

// Seconds every CPU of the machine spent busy so far (the "cpu" line of /proc/stat: user, nice,
// system, irq, softirq and steal), or nothing when it cannot be read.
std::optional<double> MachineBusySeconds() {
  std::ifstream in("/proc/stat");
  std::string label;
  int64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(in >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      label != "cpu") {
    return std::nullopt;
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  if (ticks <= 0) return std::nullopt;
  return static_cast<double>(user + nice + system + irq + softirq + steal) /
         static_cast<double>(ticks);
}

// CPU seconds this process has used, all threads.
double OwnCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// The file's text: the figure alone on the first line (what memsweep read before the
// circumstances were recorded, and still reads), then one "name value" line per circumstance.
std::string FileText(const GemmCalibration& c) {
  std::ostringstream text;
  text << std::setprecision(17) << c.flops << "\n";
  text << "dtype " << c.dtype << "\n";
  text << "measured_at " << c.measured_at << "\n";
  text << "load_average " << c.load_average << "\n";
  text << "other_busy_cores " << c.other_busy_cores << "\n";
  text << "cores " << c.cores << "\n";
  text << "threads " << c.threads << "\n";
  return text.str();
}

// A calibration file, or nothing when it is missing or holds no positive figure.
std::optional<GemmCalibration> ReadCalibrationFile(const std::string& file) {
  std::ifstream in(file);
  GemmCalibration c;
  c.file = file;
  std::string first;
  if (!std::getline(in, first)) return std::nullopt;
  try {
    c.flops = std::stod(first);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!(c.flops > 0.0)) return std::nullopt;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    if (name == "dtype") fields >> c.dtype;
    if (name == "measured_at") fields >> c.measured_at;
    if (name == "load_average") fields >> c.load_average;
    if (name == "other_busy_cores") fields >> c.other_busy_cores;
    if (name == "cores") fields >> c.cores;
    if (name == "threads") fields >> c.threads;
  }
  return c;
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

namespace {

// What the calibration's process mutex guards: the figures of this process, by cache file (or by
// machine key, dtype and device when there is no file).
struct Kept {
  std::mutex mutex;
  std::map<std::string, GemmCalibration> by_key;
};

Kept& KeptInProcess() {
  static Kept kept;
  return kept;
}

std::string ProcessKey(c10::ScalarType dtype, const c10::Device& device, const std::string& file) {
  return file.empty() ? MachineKey(dtype, device) + c10::toString(dtype) + device.str() : file;
}

GemmCalibration Measure(c10::ScalarType dtype, const c10::Device& device) {
  GemmCalibration calibration;
  calibration.dtype = c10::toString(dtype);
  calibration.measured_at = UtcNow();
  calibration.load_average = LoadAverage();
  calibration.cores = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  if (device.is_cpu()) calibration.threads = at::get_num_threads();
  const std::optional<double> busy_before = MachineBusySeconds();
  const double own_before = OwnCpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  calibration.flops = device.is_cpu()
                          ? MeasureGemmPeakFlops(dtype, {}, device)
                          : MeasureGemmPeakFlops(dtype, GemmCalibrationOptions{{4096}, 10}, device);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::optional<double> busy_after = MachineBusySeconds();
  if (busy_before && busy_after && wall > 0) {
    const double others = *busy_after - *busy_before - (OwnCpuSeconds() - own_before);
    calibration.other_busy_cores = std::max(0.0, others / wall);
  }
  return calibration;
}

void Keep(const std::string& key, GemmCalibration& calibration) {
  if (!calibration.file.empty()) WriteCacheFile(calibration.file, FileText(calibration));
  KeptInProcess().by_key[key] = calibration;
}

}  // namespace

std::string GemmCalibration::Describe() const {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << flops / 1e9 << " GFLOP/s";
  if (!dtype.empty()) text << " (" << dtype << ")";
  if (measured_at.empty()) {
    text << ", measured at an unknown time under an unknown load (an older file)";
    return text.str();
  }
  text << ", measured " << measured_at;
  if (threads > 0) text << " with " << threads << (threads == 1 ? " thread" : " threads");
  if (cores > 0) text << " on " << cores << (cores == 1 ? " core" : " cores");
  if (load_average >= 0) text << std::setprecision(2) << "; load average " << load_average;
  if (other_busy_cores >= 0) {
    text << std::setprecision(1) << ", other processes busy on " << other_busy_cores << " cores";
  }
  return text.str();
}

bool GemmCalibration::TakenUnderLoad() const {
  if (cores <= 0) return false;
  if (other_busy_cores >= 0) return other_busy_cores >= 0.25 * cores;
  return load_average >= 0.5 * cores;
}

std::string GemmCalibrationFile(c10::ScalarType dtype, const c10::Device& device) {
  return CacheFile(dtype, device);
}

GemmCalibration CachedGemmCalibration(c10::ScalarType dtype, const c10::Device& device) {
  const std::string file = CacheFile(dtype, device);
  const std::string key = ProcessKey(dtype, device, file);
  Kept& kept = KeptInProcess();
  std::lock_guard<std::mutex> lock(kept.mutex);
  auto it = kept.by_key.find(key);
  if (it != kept.by_key.end()) return it->second;
  if (!file.empty()) {
    if (std::optional<GemmCalibration> read = ReadCalibrationFile(file)) {
      return kept.by_key.emplace(key, *read).first->second;
    }
  }
  GemmCalibration calibration = Measure(dtype, device);
  calibration.file = file;
  Keep(key, calibration);
  return calibration;
}

double CachedGemmPeakFlops(c10::ScalarType dtype, const c10::Device& device) {
  return CachedGemmCalibration(dtype, device).flops;
}

GemmCalibration RecalibrateGemm(c10::ScalarType dtype, Recalibrate when,
                                const c10::Device& device) {
  const std::string file = CacheFile(dtype, device);
  const std::string key = ProcessKey(dtype, device, file);
  Kept& kept = KeptInProcess();
  std::lock_guard<std::mutex> lock(kept.mutex);
  GemmCalibration fresh = Measure(dtype, device);
  fresh.file = file;
  if (when == Recalibrate::kIfHigher) {
    std::optional<GemmCalibration> before;
    auto it = kept.by_key.find(key);
    if (it != kept.by_key.end()) {
      before = it->second;
    } else if (!file.empty()) {
      before = ReadCalibrationFile(file);
    }
    if (before && before->flops >= fresh.flops) return *before;
  }
  Keep(key, fresh);
  return fresh;
}

std::vector<GemmCalibration> KeptGemmCalibrations() {
  std::vector<GemmCalibration> found;
  const std::filesystem::path dir = CacheDir("gemm");
  std::error_code error;
  if (dir.empty() || !std::filesystem::is_directory(dir, error)) return found;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > std::strlen(kMethod) &&
        name.compare(name.size() - std::strlen(kMethod), std::string::npos, kMethod) == 0) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    if (std::optional<GemmCalibration> read = ReadCalibrationFile(file.string())) {
      found.push_back(*read);
    }
  }
  return found;
}

}  // namespace memsweep::env
