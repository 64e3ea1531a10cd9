#include "core/env/cuda_probe.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <dlfcn.h>

#ifndef MEMSWEEP_CUDA_BUILD
#define MEMSWEEP_CUDA_BUILD 0
#endif

namespace memsweep::env {
namespace {

// The driver API functions the probe uses (CUresult = int, CUdevice = int).
using CuInit = int (*)(unsigned);
using CuDriverGetVersion = int (*)(int*);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceTotalMem = int (*)(size_t*, int);
using CuDeviceGetAttribute = int (*)(int*, int, int);
constexpr int kComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kComputeCapabilityMinor = 76;

template <typename Fn>
Fn Symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(dlsym(library, name));
}

// Names, memory and compute capability of every device, from libcuda directly.
void DescribeDevices(void* driver, CudaProbe& probe) {
  auto init = Symbol<CuInit>(driver, "cuInit");
  auto version = Symbol<CuDriverGetVersion>(driver, "cuDriverGetVersion");
  auto count = Symbol<CuDeviceGetCount>(driver, "cuDeviceGetCount");
  auto get = Symbol<CuDeviceGet>(driver, "cuDeviceGet");
  auto name = Symbol<CuDeviceGetName>(driver, "cuDeviceGetName");
  auto total = Symbol<CuDeviceTotalMem>(driver, "cuDeviceTotalMem_v2");
  auto attribute = Symbol<CuDeviceGetAttribute>(driver, "cuDeviceGetAttribute");
  if (!init || !version || !count || !get || !name || !total || !attribute) return;
  if (version(&probe.driver_version) != 0 || init(0) != 0) return;
  int n = 0;
  if (count(&n) != 0) return;
  for (int i = 0; i < n; ++i) {
    int handle = 0;
    if (get(&handle, i) != 0) return;
    CudaDevice device;
    char text[256] = {};
    if (name(text, sizeof(text) - 1, handle) == 0) device.name = text;
    size_t bytes = 0;
    if (total(&bytes, handle) == 0) device.total_bytes = static_cast<int64_t>(bytes);
    attribute(&device.cc_major, kComputeCapabilityMajor, handle);
    attribute(&device.cc_minor, kComputeCapabilityMinor, handle);
    probe.devices.push_back(device);
  }
}

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
  DescribeDevices(driver, probe);
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

int64_t DeviceTotalBytes(const c10::Device& device) {
  if (!device.is_cuda()) return 0;
  const CudaProbe& probe = ProbeCuda();
  const size_t index = device.has_index() ? static_cast<size_t>(device.index()) : 0;
  return index < probe.devices.size() ? probe.devices[index].total_bytes : 0;
}

}  // namespace memsweep::env
