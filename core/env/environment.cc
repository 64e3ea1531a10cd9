#include "core/env/environment.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <dlfcn.h>
#include <torch/version.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>

#include "core/env/cpu_gemm.h"
#include "core/env/cuda_probe.h"
#include "core/env/threads.h"

#ifndef MEMSWEEP_VERSION
#define MEMSWEEP_VERSION "unknown"
#endif
#ifndef MEMSWEEP_CUDA_ABSENT  // set by core/CMakeLists.txt when CUDA is not built in
#define MEMSWEEP_CUDA_ABSENT "CPU only"
#endif
#ifndef MEMSWEEP_CUDA_BUILD
#define MEMSWEEP_CUDA_BUILD 0
#endif
#ifndef MEMSWEEP_GIT_REVISION
#define MEMSWEEP_GIT_REVISION "unknown"
#endif

namespace memsweep::env {
namespace {

// The value of the first /proc/cpuinfo line that starts with `key` ("" when there is none).
std::string ReadCpuInfo(const std::string& key) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind(key, 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.size() > colon + 1 ? line.substr(colon + 2) : "";
    }
  }
  return "";
}

std::string ReadCpuModel() {
  const std::string model = ReadCpuInfo("model name");
  return model.empty() ? "unknown" : model;
}

// The shared object that holds a symbol of the process (resolved path), or "".
std::string LibraryOf(const char* symbol) {
  void* sym = dlsym(RTLD_DEFAULT, symbol);
  Dl_info info{};
  if (sym == nullptr || dladdr(sym, &info) == 0 || info.dli_fname == nullptr) return "";
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == nullptr) return info.dli_fname;
  return resolved;
}

// "major.minor.patch" from a version number packed as major*10000 + minor*100 + patch (cuDNN 9,
// NCCL 2.19+) or major*1000 + minor*10 (CUDA runtime).
std::string Dotted(long packed, bool cuda_runtime) {
  if (packed <= 0) return "";
  if (cuda_runtime) return std::to_string(packed / 1000) + "." + std::to_string(packed % 1000 / 10);
  return std::to_string(packed / 10000) + "." + std::to_string(packed % 10000 / 100) + "." +
         std::to_string(packed % 100);
}

// NCCL's version from the libnccl that libtorch_cuda loaded, if any.
std::string NcclVersion() {
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  int version = 0;
  if (get == nullptr || get(&version) != 0) return "";
  return Dotted(version, false);
}

}  // namespace

std::string CpuModelName() {
  static const std::string model = ReadCpuModel();
  return model;
}

std::string CpuVendor() {
  static const std::string vendor = ReadCpuInfo("vendor_id");
  return vendor;
}

bool CpuHasFlag(const std::string& flag) {
  static const std::string flags = " " + ReadCpuInfo("flags") + " ";
  return flags.find(" " + flag + " ") != std::string::npos;
}

EnvironmentInfo DescribeEnvironment(const c10::Device& device) {
  EnvironmentInfo info;
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) info.hostname = host;
  info.cpu_model = CpuModelName();
  info.cores = AvailableCores();
  info.threads = at::get_num_threads();
  info.torch_version = TORCH_VERSION;
  info.cpu_capability = at::get_cpu_capability();
  info.blas_library = LibraryOf("sgemm_");
  info.blas_kind = at::hasMKL() ? "mkl" : "unknown";
  info.bf16_gemm = Bf16GemmName(ActiveBf16Gemm());
  info.fp32_gemm = Fp32GemmName(ActiveFp32Gemm());
  info.cuda_build = MEMSWEEP_CUDA_BUILD != 0;
  if (info.cuda_build) {
    const auto& hooks = at::detail::getCUDAHooks();
    info.cuda_runtime = Dotted(hooks.versionCUDART(), true);
    try {
      info.cudnn_version = Dotted(hooks.versionCuDNN(), false);
    } catch (const std::exception&) {  // a build without cuDNN
    }
    info.nccl_version = NcclVersion();
  }
  info.device = device.str();
  if (device.is_cuda()) {
    const CudaProbe& probe = ProbeCuda();
    const size_t index = device.has_index() ? static_cast<size_t>(device.index()) : 0;
    if (index < probe.devices.size()) {
      const CudaDevice& gpu = probe.devices[index];
      info.gpu_name = gpu.name;
      info.gpu_memory_bytes = gpu.total_bytes;
      info.compute_capability = std::to_string(gpu.cc_major) + "." + std::to_string(gpu.cc_minor);
    }
    info.cuda_driver = Dotted(probe.driver_version, true);
  }
  info.memsweep_version = MEMSWEEP_VERSION;
  info.git_revision = MEMSWEEP_GIT_REVISION;
  return info;
}

std::string VersionLine(const EnvironmentInfo& info) {
  std::string line = "memsweep " + info.memsweep_version + " (" + info.git_revision +
                     "), LibTorch " + info.torch_version + ", ";
  if (!info.cuda_build) return line + "CUDA: not built in (" MEMSWEEP_CUDA_ABSENT ")";
  line += "CUDA: built in (runtime " + info.cuda_runtime;
  if (!info.cudnn_version.empty()) line += ", cuDNN " + info.cudnn_version;
  if (!info.nccl_version.empty()) line += ", NCCL " + info.nccl_version;
  return line + ")";
}

}  // namespace memsweep::env
