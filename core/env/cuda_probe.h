// CudaProbe: whether this process can run on an NVIDIA GPU, and if not, why — the facts behind
// `[device] type = "cuda"` / "auto" (docs/experiment-format.md).
//
//   const CudaProbe probe = ProbeCuda();
//   if (!probe.usable()) throw ConfigError("type = \"cuda\": " + probe.reason);
//
// Three things must hold: memsweep was built with LibTorch's CUDA libraries, an NVIDIA driver is
// installed (libcuda.so.1 loads), and the driver sees at least one device.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <vector>

namespace memsweep::env {

// One GPU as the driver describes it (read through the driver API: no CUDA context is created,
// so probing costs no device memory).
struct CudaDevice {
  std::string name;         // "NVIDIA H100 80GB HBM3"
  int64_t total_bytes = 0;  // device memory (what cudaMemGetInfo calls total)
  int cc_major = 0, cc_minor = 0;  // compute capability
};

struct CudaProbe {
  bool cuda_build = false;  // built with libtorch_cuda / libc10_cuda
  bool driver = false;      // libcuda.so.1 could be loaded
  int device_count = 0;     // devices the CUDA runtime reports
  std::string reason;       // empty when usable; otherwise what was found, in words
  int driver_version = 0;   // cuDriverGetVersion: 13000 = CUDA 13.0
  std::vector<CudaDevice> devices;  // by index, when the driver answers

  bool usable() const { return cuda_build && driver && device_count > 0; }
};

// Probes once per process (later calls return the first answer).
const CudaProbe& ProbeCuda();

// The memory of a CUDA device as the driver reports it; 0 for the CPU or an unknown device.
int64_t DeviceTotalBytes(const c10::Device& device);

}  // namespace memsweep::env
