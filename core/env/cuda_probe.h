// CudaProbe: whether this process can run on an NVIDIA GPU, and if not, why — the facts behind
// `[device] type = "cuda"` / "auto" (docs/experiment-format.md).
//
//   const CudaProbe probe = ProbeCuda();
//   if (!probe.usable()) throw ConfigError("type = \"cuda\": " + probe.reason);
//
// Three things must hold: memsweep was built with LibTorch's CUDA libraries, an NVIDIA driver is
// installed (libcuda.so.1 loads), and the driver sees at least one device.
#pragma once

#include <string>

namespace memsweep::env {

struct CudaProbe {
  bool cuda_build = false;  // built with libtorch_cuda / libc10_cuda
  bool driver = false;      // libcuda.so.1 could be loaded
  int device_count = 0;     // devices the CUDA runtime reports
  std::string reason;       // empty when usable; otherwise what was found, in words

  bool usable() const { return cuda_build && driver && device_count > 0; }
};

// Probes once per process (later calls return the first answer).
const CudaProbe& ProbeCuda();

}  // namespace memsweep::env
