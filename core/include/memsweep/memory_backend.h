// MemoryBackend: where the tracking allocator gets its bytes from.
//
// memsweep's tracking allocator counts what tensors hold on the simulated CPU device
// ("allocated"); a backend decides how those bytes are obtained from the device and so what is
// "reserved". The default backend asks the system allocator for each request (reserved ==
// allocated); a caching backend can keep freed blocks for reuse (reserved >= allocated), as a GPU
// caching allocator does. A backend charges every byte it reserves against the device's budget
// (SimulatedDeviceBudget().Charge), which throws c10::OutOfMemoryError when the budget would be
// exceeded. The allocator slot's plugin returns its backend from AllocatorStrategy::MakeBackend.
//
//   DeviceBudget& device = SimulatedDeviceBudget();
//   device.Charge(segment_bytes, requested_bytes);  // may throw c10::OutOfMemoryError
//   ...
//   device.Uncharge(segment_bytes);                 // when the segment goes back
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace memsweep::memory {

class MemoryBackend {
 public:
  virtual ~MemoryBackend() = default;
  // Returns memory for nbytes (> 0), 64-byte aligned. May throw c10::OutOfMemoryError.
  virtual void* Allocate(size_t nbytes) = 0;
  // Gives back a pointer returned by Allocate with the same nbytes.
  virtual void Deallocate(void* ptr, size_t nbytes) = 0;
  // Bytes currently held from the device (charged against the budget).
  virtual int64_t ReservedBytes() const = 0;
  // Releases cached, unused memory back to the device. No-op for backends without a cache.
  virtual void EmptyCache() {}
  virtual std::string Name() const = 0;
};

// The simulated device's memory budget, as a backend sees it.
class DeviceBudget {
 public:
  // The budget in bytes; nullopt = unlimited.
  virtual std::optional<int64_t> Budget() const = 0;
  // Bytes every backend has charged and not yet uncharged.
  virtual int64_t ReservedBytes() const = 0;
  // Before a backend reserves nbytes more (for a request of requested_bytes): throws
  // c10::OutOfMemoryError, and records the OOM event with both sizes, when the budget would be
  // exceeded.
  virtual void Charge(int64_t nbytes, int64_t requested_bytes) const = 0;
  // After a backend gave nbytes back to the device.
  virtual void Uncharge(int64_t nbytes) const = 0;

 protected:
  ~DeviceBudget() = default;
};

// The run's simulated device (the host's tracking allocator): one per process.
DeviceBudget& SimulatedDeviceBudget();

// Asks the system allocator for every request; reserved == allocated.
class SystemBackend final : public MemoryBackend {
 public:
  void* Allocate(size_t nbytes) override;
  void Deallocate(void* ptr, size_t nbytes) override;
  int64_t ReservedBytes() const override;
  std::string Name() const override { return "system"; }

 private:
  int64_t reserved_ = 0;  // guarded by the tracking allocator's lock
};

}  // namespace memsweep::memory
