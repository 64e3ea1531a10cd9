#include "core/env/environment.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <torch/version.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>

#include "core/env/gemm_backend.h"
#include "core/env/threads.h"

#ifndef MEMSWEEP_VERSION
#define MEMSWEEP_VERSION "unknown"
#endif
#ifndef MEMSWEEP_GIT_REVISION
#define MEMSWEEP_GIT_REVISION "unknown"
#endif

namespace memsweep::env {
namespace {

std::string CpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::string SystemBlasPath() {
  void* sym = dlsym(RTLD_NEXT, "sgemm_");
  Dl_info info{};
  if (sym == nullptr || dladdr(sym, &info) == 0 || info.dli_fname == nullptr) return "";
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == nullptr) return info.dli_fname;
  return resolved;
}

std::string BlasKind(const std::string& path) {
  if (path.empty()) return "unknown";
  if (path.find("openblas-openmp") != std::string::npos) return "openblas-openmp";
  if (path.find("openblas-pthread") != std::string::npos) return "openblas-pthread";
  if (path.find("openblas-serial") != std::string::npos) return "openblas-serial";
  if (path.find("blis") != std::string::npos) return "blis";
  if (path.find("atlas") != std::string::npos) return "atlas";
  if (path.find("mkl") != std::string::npos) return "mkl";
  if (path.find("/blas/") != std::string::npos) return "reference";
  return "unknown";
}

}  // namespace

EnvironmentInfo DescribeEnvironment() {
  EnvironmentInfo info;
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) == 0) info.hostname = host;
  info.cpu_model = CpuModel();
  info.cores = AvailableCores();
  info.threads = at::get_num_threads();
  info.torch_version = TORCH_VERSION;
  info.blas_library = SystemBlasPath();
  info.blas_kind = BlasKind(info.blas_library);
  info.gemm_backend = GemmBackendName(ActiveGemmBackend());
  info.memsweep_version = MEMSWEEP_VERSION;
  info.git_revision = MEMSWEEP_GIT_REVISION;
  return info;
}

bool IsReferenceBlas(const EnvironmentInfo& info) {
  return info.blas_kind == "reference" && info.gemm_backend == "blas";
}

}  // namespace memsweep::env
