// The CUDA device's DeviceMeter: LibTorch's CUDA caching allocator for one GPU, read through its
// statistics (the figures torch.cuda.memory_stats() shows), capped with setMemoryFraction.
//
// The allocator keeps one peak per statistic, which resetPeakStats sets back to the current
// value. The window peak (one stage) is that peak; before each reset it is folded into the run's
// peak, so both are exact. Counts (allocations, retries, OOMs) are cumulative in the allocator;
// the meter subtracts their values at ResetCounts.
#include "core/memory/device_meter.h"

#include <stdexcept>

#ifndef MEMSWEEP_CUDA_BUILD
#define MEMSWEEP_CUDA_BUILD 0
#endif

#if MEMSWEEP_CUDA_BUILD
#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/cuda/memory_snapshot.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#endif

namespace memsweep::memory {

#if MEMSWEEP_CUDA_BUILD
namespace {

namespace cca = c10::cuda::CUDACachingAllocator;
constexpr size_t kAll = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);

class CudaMeter;
// The meter whose device the OOM observer reports on (one run at a time per process).
std::atomic<CudaMeter*> g_active{nullptr};

class CudaMeter final : public DeviceMeter {
 public:
  explicit CudaMeter(c10::DeviceIndex index) : index_(index) {
    // LibTorch's CUDA state (the caching allocator among it) is set up on first use; the meter
    // reads the allocator before any tensor has asked for it.
    at::globalContext().lazyInitDevice(c10::kCUDA);
    size_t free_bytes = 0, total_bytes = 0;
    c10::cuda::CUDAGuard guard(index_);
    C10_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    device_total_ = static_cast<int64_t>(total_bytes);
    static std::once_flag observer_once;
    std::call_once(observer_once, [] {
      // Every block the allocator hands out, for the run's largest allocation. Called with the
      // allocator's lock held: the recorder takes only its own leaf lock, calls no LibTorch.
      cca::attachAllocatorTraceTracker([](const cca::TraceEntry& entry) {
        if (entry.action_ != cca::TraceEntry::ALLOC) return;
        if (CudaMeter* meter = g_active.load()) {
          if (entry.device_ == meter->index_) {
            meter->largest_.Record(static_cast<int64_t>(entry.size_));
          }
        }
      });
      cca::attachOutOfMemoryObserver(
          [](int64_t device, size_t requested, size_t limit, size_t free_bytes) {
            if (CudaMeter* meter = g_active.load()) {
              meter->OnOom(device, static_cast<int64_t>(requested), static_cast<int64_t>(limit),
                           static_cast<int64_t>(free_bytes));
            }
          });
    });
    g_active.store(this);
    ResetCounts();
  }
  ~CudaMeter() override {
    CudaMeter* self = this;
    g_active.compare_exchange_strong(self, nullptr);
  }

  c10::Device Device() const override { return c10::Device(c10::kCUDA, index_); }
  int64_t AllocatedBytes() const override { return Stats().allocated_bytes[kAll].current; }
  int64_t ReservedBytes() const override { return Stats().reserved_bytes[kAll].current; }
  int64_t ActiveBytes() const override { return Stats().active_bytes[kAll].current; }
  void EmptyCache() override { cca::emptyCache(); }

  int64_t PeakAllocatedBytes() const override {
    return std::max(run_peak_allocated_, Stats().allocated_bytes[kAll].peak);
  }
  int64_t PeakReservedBytes() const override {
    return std::max(run_peak_reserved_, Stats().reserved_bytes[kAll].peak);
  }
  int64_t PeakActiveBytes() const override {
    return std::max(run_peak_active_, Stats().active_bytes[kAll].peak);
  }
  int64_t WindowPeakBytes() const override { return Stats().allocated_bytes[kAll].peak; }
  void ResetWindowPeak() override {
    const auto stats = Stats();
    run_peak_allocated_ = std::max(run_peak_allocated_, stats.allocated_bytes[kAll].peak);
    run_peak_reserved_ = std::max(run_peak_reserved_, stats.reserved_bytes[kAll].peak);
    run_peak_active_ = std::max(run_peak_active_, stats.active_bytes[kAll].peak);
    cca::resetPeakStats(index_);
  }
  void ResetPeak() override {
    run_peak_allocated_ = run_peak_reserved_ = run_peak_active_ = 0;
    cca::resetPeakStats(index_);
  }
  void ResetCounts() override {
    const auto stats = Stats();
    allocations_at_reset_ = stats.allocation[kAll].allocated;
    retries_at_reset_ = stats.num_alloc_retries;
    ooms_at_reset_ = stats.num_ooms;
  }
  int64_t Allocations() const override {
    return Stats().allocation[kAll].allocated - allocations_at_reset_;
  }
  int64_t AllocRetries() const override { return Stats().num_alloc_retries - retries_at_reset_; }
  int64_t OomCount() const override { return Stats().num_ooms - ooms_at_reset_; }

  // The caching allocator refuses to reserve beyond fraction × the device's memory.
  void SetBudget(std::optional<int64_t> budget_bytes) override {
    budget_ = budget_bytes;
    const double fraction =
        budget_bytes ? std::min(1.0, static_cast<double>(*budget_bytes) / device_total_) : 1.0;
    cca::setMemoryFraction(fraction, index_);
  }
  std::optional<int64_t> Budget() const override { return budget_; }
  void SetStage(const char* stage) override { stage_.store(stage); }
  std::optional<OomEvent> LastOom() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_oom_;
  }
  void ClearLastOom() override {
    std::lock_guard<std::mutex> lock(mutex_);
    last_oom_.reset();
  }
  LargestAllocationRecorder& Largest() override { return largest_; }

  // LibTorch's own recording (libtorch_cuda): every device's trace, the latest max_entries
  // events each, cleared at the start. No context is gathered (no Python here, and unwinding
  // C++ stacks on each allocation is slow), so the events carry no frames. Event sizes are the
  // requested sizes; allocated_bytes counts the blocks' rounded sizes (docs/snapshot.md).
  void StartHistory(int64_t max_entries) override {
    torch::cuda::_record_memory_history(std::optional<std::string>("all"),
                                        /*context=*/std::nullopt, /*stacks=*/"python",
                                        static_cast<size_t>(max_entries),
                                        /*clearHistory=*/true);
  }
  MemorySnapshot TakeHistory() override {
    MemorySnapshot snapshot;
    snapshot.pickle = torch::cuda::_memory_snapshot_pickled();
    const auto traces = cca::snapshot().device_traces;
    if (static_cast<size_t>(index_) < traces.size()) {
      snapshot.events = static_cast<int64_t>(traces[index_].size());
    }
    torch::cuda::_record_memory_history(/*enabled=*/std::optional<std::string>());
    return snapshot;
  }

 private:
  c10::CachingDeviceAllocator::DeviceStats Stats() const { return cca::getDeviceStats(index_); }

  // Called by the allocator, before it raises OutOfMemoryError, with the (rounded) request.
  void OnOom(int64_t device, int64_t requested, int64_t limit, int64_t free_bytes) {
    if (device != index_) return;
    const auto stats = Stats();
    OomEvent event;
    event.requested_bytes = requested;
    event.budget_bytes = budget_ ? *budget_ : limit;
    event.allocated_bytes = stats.allocated_bytes[kAll].current;
    event.reserved_bytes = stats.reserved_bytes[kAll].current;
    event.stage = stage_.load();
    event.message = "CUDA out of memory on cuda:" + std::to_string(device) + " in stage " +
                    event.stage + ": tried to allocate " + std::to_string(requested) +
                    " bytes with " + std::to_string(event.reserved_bytes) + " reserved of a " +
                    std::to_string(event.budget_bytes) + "-byte limit (" +
                    std::to_string(free_bytes) + " bytes free on the device)";
    std::lock_guard<std::mutex> lock(mutex_);
    last_oom_ = event;
  }

  c10::DeviceIndex index_;
  int64_t device_total_ = 0;
  std::optional<int64_t> budget_;
  int64_t run_peak_allocated_ = 0, run_peak_reserved_ = 0, run_peak_active_ = 0;
  int64_t allocations_at_reset_ = 0, retries_at_reset_ = 0, ooms_at_reset_ = 0;
  std::atomic<const char*> stage_{"idle"};
  mutable std::mutex mutex_;
  std::optional<OomEvent> last_oom_;
  LargestAllocationRecorder largest_;
};

}  // namespace
#endif

std::unique_ptr<DeviceMeter> MakeDeviceMeter(const c10::Device& device) {
  // The meta device's storages are the tracking allocator's too (meta_tracking.h).
  if (device.is_cpu() || device.is_meta()) return MakeCpuMeter(TrackingAllocator::Instance(), device);
#if MEMSWEEP_CUDA_BUILD
  if (device.is_cuda()) return std::make_unique<CudaMeter>(device.has_index() ? device.index() : 0);
#endif
  throw std::runtime_error("no memory meter for device " + device.str() +
                           " in this build (memsweep measures cpu and, when built with CUDA, cuda)");
}

}  // namespace memsweep::memory
