// CountingHostPool: the part of every HostPool (memsweep/host_pool.h) that counts: each tensor it
// hands out carries a deleter that gives its memory back and lowers the pool's count, so the
// pool's bytes and peak stay exact even for tensors that outlive it. MallocHostPool (CPU) and
// PinnedHostPool (CUDA) differ only in where the memory comes from; MetaHostPool (the estimate)
// hands out meta tensors, counted and never allocated.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "memsweep/host_pool.h"

namespace memsweep::memory {

class CountingHostPool : public HostPool {
 public:
  CountingHostPool();
  int64_t AllocatedBytes() const override;
  int64_t PeakBytes() const override;

 protected:
  static int64_t BytesOf(at::IntArrayRef sizes, c10::ScalarType dtype);
  // A tensor over `data` (`bytes` long) on `device`; `release` frees the memory when the tensor
  // goes.
  at::Tensor Counted(void* data, int64_t bytes, at::IntArrayRef sizes, c10::ScalarType dtype,
                     std::function<void()> release, c10::DeviceType device = c10::kCPU);

 private:
  struct Counters {
    std::atomic<int64_t> allocated{0};
    std::atomic<int64_t> peak{0};
  };
  std::shared_ptr<Counters> counters_;  // shared with every tensor's deleter
};

}  // namespace memsweep::memory
