// MallocHostPool: the CPU build's HostPool (memsweep/host_pool.h). Offloaded tensors are
// malloc'ed beside the tracking allocator, so they never count against the device budget; the
// pool counts its own bytes and peak. (A CUDA build would use pinned host memory here.)
#pragma once

#include <atomic>
#include <memory>

#include "memsweep/host_pool.h"

namespace memsweep::memory {

class MallocHostPool final : public HostPool {
 public:
  MallocHostPool();
  at::Tensor Empty(at::IntArrayRef sizes, c10::ScalarType dtype) override;
  int64_t AllocatedBytes() const override;
  int64_t PeakBytes() const override;

 private:
  struct Counters {
    std::atomic<int64_t> allocated{0};
    std::atomic<int64_t> peak{0};
  };
  // Shared with every tensor's deleter: a tensor may outlive the pool.
  std::shared_ptr<Counters> counters_;
};

}  // namespace memsweep::memory
