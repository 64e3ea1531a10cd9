// DeviceMemory: the run's device memory as a strategy sees it — the figures of the allocator that
// serves the device's tensors, and its cache. On the CPU device that is memsweep's tracking
// allocator (with the allocator slot's simulated backend); on a CUDA device it is LibTorch's CUDA
// caching allocator for that GPU. RunContext::device_memory points to it in every stage.
//
//   const int64_t before = ctx.device_memory->ReservedBytes();
//   ctx.device_memory->EmptyCache();
//   ctx.record("released_bytes", double(before - ctx.device_memory->ReservedBytes()));
#pragma once

#include <c10/core/Device.h>

#include <cstdint>

namespace memsweep {

class DeviceMemory {
 public:
  virtual ~DeviceMemory();
  // cpu, or cuda:N.
  virtual c10::Device Device() const = 0;
  // Bytes held by live tensors on the device.
  virtual int64_t AllocatedBytes() const = 0;
  // Bytes the allocator holds from the device: allocated plus its cache.
  virtual int64_t ReservedBytes() const = 0;
  // Gives the cached, unused memory back to the device (torch.cuda.empty_cache()).
  virtual void EmptyCache() = 0;
};

}  // namespace memsweep
