// MemoryBackend: where the tracking allocator gets its bytes from.
//
// The tracking allocator (tracking_allocator.h) counts what tensors hold ("allocated"); a backend
// decides how those bytes are obtained from the simulated device and so what is "reserved".
// The default backend asks the system allocator for each request (reserved == allocated); a
// caching backend can keep freed blocks for reuse (reserved >= allocated), as a GPU caching
// allocator does. A backend charges every byte it reserves against the device budget with
// DeviceBudget::Charge, which throws c10::OutOfMemoryError when the budget would be exceeded.
//
//   auto backend = std::make_shared<MyBackend>();
//   TrackingAllocator::Instance().SetBackend(backend);
#pragma once

#include <cstddef>
#include <cstdint>
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
