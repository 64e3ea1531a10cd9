// PinnedHostPool: the CUDA device's HostPool (memsweep/host_pool.h). Offloaded tensors live in
// page-locked host memory from LibTorch's CUDA host allocator, so copies between them and the
// GPU can be asynchronous (non_blocking); they never count against the device budget. The pool
// counts its own bytes and peak, as MallocHostPool does on the CPU.
#pragma once

#include <atomic>
#include <memory>

#include "memsweep/host_pool.h"

namespace memsweep::memory {

class PinnedHostPool final : public HostPool {
 public:
  PinnedHostPool();
  at::Tensor Empty(at::IntArrayRef sizes, c10::ScalarType dtype) override;
  int64_t AllocatedBytes() const override;
  int64_t PeakBytes() const override;

 private:
  struct Counters {
    std::atomic<int64_t> allocated{0};
    std::atomic<int64_t> peak{0};
  };
  std::shared_ptr<Counters> counters_;  // shared with every tensor's deleter
};

}  // namespace memsweep::memory
