#include "core/env/cuda_probe.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <dlfcn.h>

#ifndef MEMSWEEP_CUDA_BUILD
#define MEMSWEEP_CUDA_BUILD 0
#endif

namespace memsweep::env {
namespace {

CudaProbe Probe() {
  CudaProbe probe;
  probe.cuda_build = MEMSWEEP_CUDA_BUILD != 0;
  if (!probe.cuda_build) {
    probe.reason = "this memsweep is a CPU-only build (its LibTorch has no CUDA libraries)";
    return probe;
  }
  // The driver library is what the CUDA runtime opens lazily; without it there is no GPU to use.
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  probe.driver = driver != nullptr;
  if (!probe.driver) {
    probe.reason = "no NVIDIA driver on this machine (libcuda.so.1 not found)";
    return probe;
  }
  dlclose(driver);
  probe.device_count = at::detail::getCUDAHooks().getNumGPUs();
  if (probe.device_count <= 0) {
    probe.reason = "the NVIDIA driver is installed but reports no CUDA device";
  }
  return probe;
}

}  // namespace

const CudaProbe& ProbeCuda() {
  static const CudaProbe probe = Probe();
  return probe;
}

}  // namespace memsweep::env
