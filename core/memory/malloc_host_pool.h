// MallocHostPool: the CPU device's HostPool (memsweep/host_pool.h). Offloaded tensors are
// malloc'ed beside the tracking allocator, so they never count against the device budget; the
// pool counts its own bytes and peak (counting_host_pool.h). On CUDA: PinnedHostPool.
#pragma once

#include "core/memory/counting_host_pool.h"

namespace memsweep::memory {

class MallocHostPool final : public CountingHostPool {
 public:
  at::Tensor Empty(at::IntArrayRef sizes, c10::ScalarType dtype) override;
};

}  // namespace memsweep::memory
