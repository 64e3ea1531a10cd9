// HostPool: host memory that the device accounting does not count (pinned host memory on a
// CUDA build; on the CPU a separate malloc pool beside the tracking allocator's budget), where
// offloading strategies keep what they move off the device. The host measures its bytes and
// peak per rank (host_pool_peak_bytes; docs/metrics.md).
//
//   at::Tensor m = ctx.host_pool->Zeros({n}, at::kFloat);   // outside the device budget
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace memsweep {

class HostPool {
 public:
  virtual ~HostPool();
  virtual at::Tensor Empty(at::IntArrayRef sizes, c10::ScalarType dtype) = 0;
  at::Tensor Zeros(at::IntArrayRef sizes, c10::ScalarType dtype) {
    at::Tensor t = Empty(sizes, dtype);
    t.zero_();
    return t;
  }
  virtual int64_t AllocatedBytes() const = 0;
  virtual int64_t PeakBytes() const = 0;
};

}  // namespace memsweep
