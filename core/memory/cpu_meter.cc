// The CPU device's DeviceMeter: a thin view of the tracking allocator.
#include "core/memory/device_meter.h"

namespace memsweep::memory {
namespace {

class CpuMeter final : public DeviceMeter {
 public:
  CpuMeter(TrackingAllocator& tracker, c10::Device device) : tracker_(tracker), device_(device) {}
  c10::Device Device() const override { return device_; }
  int64_t AllocatedBytes() const override { return tracker_.AllocatedBytes(); }
  int64_t ReservedBytes() const override { return tracker_.ReservedBytes(); }
  void EmptyCache() override { tracker_.EmptyCache(); }
  int64_t PeakAllocatedBytes() const override { return tracker_.PeakAllocatedBytes(); }
  int64_t PeakReservedBytes() const override { return tracker_.PeakReservedBytes(); }
  int64_t WindowPeakBytes() const override { return tracker_.WindowPeakBytes(); }
  void ResetWindowPeak() override { tracker_.ResetWindowPeak(); }
  void ResetPeak() override { tracker_.ResetPeak(); }
  void ResetCounts() override { tracker_.ResetCounts(); }
  int64_t Allocations() const override { return tracker_.Counters().allocations; }
  // The simulated backends report their own retries (allocator/caching's plugin metrics).
  int64_t AllocRetries() const override { return 0; }
  int64_t OomCount() const override { return tracker_.LastOom() ? 1 : 0; }
  void SetBudget(std::optional<int64_t> budget_bytes) override { tracker_.SetBudget(budget_bytes); }
  std::optional<int64_t> Budget() const override { return tracker_.Budget(); }
  void SetStage(const char* stage) override { tracker_.SetStage(stage); }
  std::optional<OomEvent> LastOom() const override { return tracker_.LastOom(); }
  void ClearLastOom() override { tracker_.ClearLastOom(); }
  LargestAllocationRecorder& Largest() override { return tracker_.Largest(); }
  void StartHistory(int64_t max_entries) override { tracker_.StartHistory(max_entries); }
  MemorySnapshot TakeHistory() override { return tracker_.TakeHistory(); }

 private:
  TrackingAllocator& tracker_;
  c10::Device device_;
};

}  // namespace

std::unique_ptr<DeviceMeter> MakeCpuMeter(TrackingAllocator& tracker, c10::Device device) {
  return std::make_unique<CpuMeter>(tracker, device);
}

}  // namespace memsweep::memory
