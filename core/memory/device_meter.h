// DeviceMeter: the source of every device memory figure a run reports, for either device.
//
// On the CPU device it reads memsweep's tracking allocator (tracking_allocator.h), whose backend
// the allocator slot chooses and whose budget simulates a GPU's size. On a CUDA device it reads
// LibTorch's CUDA caching allocator for that GPU (cuda_meter.h): the same figures — allocated,
// reserved, active, their peaks, a resettable window peak per stage — so that a CPU cell and the
// same cell on CUDA compare column by column (docs/metrics.md).
//
//   std::unique_ptr<DeviceMeter> meter = MakeDeviceMeter(device);
//   meter->SetBudget(20LL << 30);      // CUDA: caps the caching allocator (setMemoryFraction)
//   meter->ResetWindowPeak();
//   ... forward ...
//   int64_t forward_peak = meter->WindowPeakBytes();
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/memory/tracking_allocator.h"
#include "memsweep/device_memory.h"

namespace memsweep::memory {

class DeviceMeter : public DeviceMemory {
 public:
  // Highest allocated / reserved / active bytes since the last ResetPeak (absolute).
  virtual int64_t PeakAllocatedBytes() const = 0;
  virtual int64_t PeakReservedBytes() const = 0;
  // Bytes of blocks in use, including the unused tail of split blocks (CUDA's "active"); the
  // tracking allocator hands out exact sizes, so on the CPU it equals allocated.
  virtual int64_t ActiveBytes() const { return AllocatedBytes(); }
  virtual int64_t PeakActiveBytes() const { return PeakAllocatedBytes(); }
  // Highest allocated bytes since the last ResetWindowPeak (absolute).
  virtual int64_t WindowPeakBytes() const = 0;
  virtual void ResetWindowPeak() = 0;
  // Every peak := its current value; counts := 0.
  virtual void ResetPeak() = 0;
  virtual void ResetCounts() = 0;
  // Since the last ResetCounts: successful allocations; allocation retries (the cache was
  // flushed and the request tried again); OOMs the allocator raised.
  virtual int64_t Allocations() const = 0;
  virtual int64_t AllocRetries() const = 0;
  virtual int64_t OomCount() const = 0;
  // The most the allocator may reserve (nullopt = the whole device); beyond it requests fail
  // with c10::OutOfMemoryError.
  virtual void SetBudget(std::optional<int64_t> budget_bytes) = 0;
  virtual std::optional<int64_t> Budget() const = 0;
  // Label of the stage now running (a string literal); named by OOM events.
  virtual void SetStage(const char* stage) = 0;
  // The largest single allocation on the device (LargestAllocationRecorder: its position is set
  // by the run, its Reset at the run's start).
  virtual LargestAllocationRecorder& Largest() = 0;
  // Allocation history (docs/snapshot.md): from StartHistory on, the allocator records its
  // latest `max_entries` events; TakeHistory stops recording and returns them as the pickle of
  // torch.cuda.memory._dump_snapshot (PyTorch's memory viewer opens it). The CPU's tracking
  // allocator records them itself, with frames naming the stage; on CUDA LibTorch records them
  // (torch::cuda::_record_memory_history, without stacks: the events have no frames).
  virtual void StartHistory(int64_t max_entries) = 0;
  virtual MemorySnapshot TakeHistory() = 0;
  // The request that failed last, if one did since ClearLastOom.
  virtual std::optional<OomEvent> LastOom() const = 0;
  virtual void ClearLastOom() = 0;
};

// The CPU device's meter over the tracking allocator (which must be installed); with `device`
// meta, the estimate's (the tracking allocator serves meta storages too: meta_tracking.h).
std::unique_ptr<DeviceMeter> MakeCpuMeter(TrackingAllocator& tracker,
                                          c10::Device device = c10::Device(c10::kCPU));
// The meter of `device`: cpu → MakeCpuMeter(TrackingAllocator::Instance()); cuda:N → the CUDA
// caching allocator's (throws std::runtime_error on a build without CUDA).
std::unique_ptr<DeviceMeter> MakeDeviceMeter(const c10::Device& device);

}  // namespace memsweep::memory
