// PinnedHostPool: the CUDA device's HostPool (memsweep/host_pool.h). Offloaded tensors live in
// page-locked host memory from LibTorch's CUDA host allocator, so copies between them and the
// GPU can be asynchronous (non_blocking); they never count against the device budget. The pool
// counts its own bytes and peak (counting_host_pool.h), as MallocHostPool does on the CPU.
#pragma once

#include "core/memory/counting_host_pool.h"

namespace memsweep::memory {

class PinnedHostPool final : public CountingHostPool {
 public:
  at::Tensor Empty(at::IntArrayRef sizes, c10::ScalarType dtype) override;
};

}  // namespace memsweep::memory
