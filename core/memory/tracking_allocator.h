// TrackingAllocator: memsweep's CPU allocator, the source of every memory figure it reports.
//
// Installed once per process with c10::SetCPUAllocator, it sees every CPU tensor allocation and
// keeps exact counters: current and peak allocated bytes, a resettable "window" peak (used to
// measure one phase of a training step), allocation counts, and reserved bytes as reported by
// the active MemoryBackend. An optional device budget makes it behave like a GPU of that size:
// a reservation that would exceed the budget throws c10::OutOfMemoryError with a CUDA-like
// message, and the failed request is remembered as the last OOM event.
//
//   auto& tracker = TrackingAllocator::Install();
//   tracker.SetBudget(2LL << 30);
//   tracker.ResetWindowPeak();
//   ... run forward ...
//   int64_t forward_peak = tracker.WindowPeakBytes();
//
// Memory that LibTorch's BLAS/oneDNN kernels allocate internally with malloc is not seen here;
// the process RSS high-water mark (rss.h) is the outside view that includes it.
#pragma once

#include <c10/core/Allocator.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/memory/allocation_history.h"
#include "core/memory/largest_allocation.h"
#include "memsweep/memory_backend.h"

namespace memsweep::memory {

// What the last budget OOM looked like.
struct OomEvent {
  int64_t requested_bytes = 0;
  int64_t budget_bytes = 0;
  int64_t allocated_bytes = 0;
  int64_t reserved_bytes = 0;
  // How far the budget fell short of the request: reserved + the bytes the backend asked to
  // reserve for it (a whole segment under a caching backend) - budget. 0 where not known (CUDA).
  int64_t short_bytes = 0;
  std::string stage;
  std::string message;
};

// A snapshot of the counters.
struct MemoryCounters {
  int64_t allocated_bytes = 0;
  int64_t peak_allocated_bytes = 0;
  int64_t reserved_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t allocations = 0;    // number of successful Allocate calls since the last ResetCounts
  int64_t deallocations = 0;  // number of frees since the last ResetCounts
};

// The process's heap policy for CPU training (called by TrackingAllocator::Install): glibc's
// malloc serves every request from its heap and never trims it, so the pages a training step
// freed serve the next step instead of being unmapped and faulted in (and zeroed) again.
void KeepFreedPagesInTheHeap();

class TrackingAllocator final : public c10::Allocator, public DeviceBudget {
 public:
  // The process-wide instance (installed or not).
  static TrackingAllocator& Instance();
  // Makes the instance LibTorch's CPU allocator (idempotent) and returns it.
  // Also sets the process's heap policy: glibc's malloc keeps freed pages for reuse instead of
  // returning them to the system (KeepFreedPagesInTheHeap).
  static TrackingAllocator& Install();
  static bool Installed();

  c10::DataPtr allocate(size_t nbytes) override;
  c10::DeleterFnPtr raw_deleter() const override;
  // Tensor copies between blocks of this allocator (Storage clone): a plain memcpy.
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  // Replaces the backend. Blocks still held by an earlier backend go back to it when freed.
  void SetBackend(std::shared_ptr<MemoryBackend> backend);
  MemoryBackend& Backend() const;
  std::shared_ptr<MemoryBackend> BackendPtr() const;
  // Asks the active backend to give its cached, unused memory back to the device.
  void EmptyCache();
  // Every backend installed so far, the current one and those a run installed and replaced:
  // frees their unused segments. For runs one after another in one process (the estimate's ranks),
  // whose last tensors (a plugin's, freed with it after the run) went back to a replaced backend.
  void EmptyEveryCache();

  // Device budget in bytes; nullopt = unlimited.
  void SetBudget(std::optional<int64_t> budget_bytes);
  std::optional<int64_t> Budget() const override;
  // DeviceBudget: called by backends before they reserve nbytes more from the device (throws
  // c10::OutOfMemoryError and records the OOM event when the budget would be exceeded), and
  // after they gave bytes back.
  void Charge(int64_t nbytes, int64_t requested_bytes) const override;
  void Uncharge(int64_t nbytes) const override;

  int64_t AllocatedBytes() const { return allocated_.load(std::memory_order_relaxed); }
  int64_t PeakAllocatedBytes() const { return peak_.load(std::memory_order_relaxed); }
  int64_t WindowPeakBytes() const { return window_peak_.load(std::memory_order_relaxed); }
  int64_t ReservedBytes() const override { return reserved_.load(std::memory_order_relaxed); }
  int64_t PeakReservedBytes() const { return peak_reserved_.load(std::memory_order_relaxed); }
  MemoryCounters Counters() const;

  // Peak := current (for the whole-run peak and the window peak respectively).
  void ResetPeak();
  void ResetWindowPeak();
  void ResetCounts();

  // Label of the pipeline stage now running; appears in OOM messages. Must be a string literal
  // or otherwise outlive the run.
  void SetStage(const char* stage) { stage_.store(stage, std::memory_order_relaxed); }
  const char* Stage() const { return stage_.load(std::memory_order_relaxed); }

  std::optional<OomEvent> LastOom() const;
  void ClearLastOom();
  // The largest single allocation since its Reset (every successful allocate()).
  LargestAllocationRecorder& Largest() { return largest_; }

  // Allocation history (allocation_history.h; docs/snapshot.md): from StartHistory on, every
  // allocation and free is recorded with the position Largest() holds and the AllocationLabel in
  // force, keeping the latest `max_entries` events. TakeHistory stops recording and returns the
  // pickle PyTorch's memory viewer opens; its segments are the blocks live at that moment.
  // Without StartHistory nothing is recorded (one branch per allocation and free).
  void StartHistory(int64_t max_entries);
  bool RecordingHistory() const;
  MemorySnapshot TakeHistory();

 private:
  TrackingAllocator();
  static void Delete(void* ptr);
  void Free(void* ptr) const;

  struct Block {
    size_t nbytes;
    MemoryBackend* backend;
    // Where it was allocated, when the history was recording then.
    std::optional<HistoryPosition> position;
  };
  HistoryPosition CurrentPosition() const;

  mutable std::mutex mutex_;  // guards blocks_, backends_ and the backend's own state
  mutable std::unordered_map<void*, Block> blocks_;
  std::vector<std::shared_ptr<MemoryBackend>> backends_;  // every backend ever set; never freed
  MemoryBackend* backend_ = nullptr;

  mutable std::atomic<int64_t> allocated_{0};
  mutable std::atomic<int64_t> peak_{0};
  mutable std::atomic<int64_t> window_peak_{0};
  mutable std::atomic<int64_t> reserved_{0};
  mutable std::atomic<int64_t> peak_reserved_{0};
  mutable std::atomic<int64_t> allocations_{0};
  mutable std::atomic<int64_t> deallocations_{0};
  // No budget: std::optional outside (SetBudget, Budget()); inside, an atomic cannot hold one,
  // so a negative value stands for none.
  static constexpr int64_t kNoBudget = -1;
  std::atomic<int64_t> budget_{kNoBudget};
  std::atomic<const char*> stage_{"idle"};
  mutable std::optional<OomEvent> last_oom_;  // guarded by mutex_
  mutable std::unique_ptr<AllocationHistory> history_;  // guarded by mutex_; null = not recording
  LargestAllocationRecorder largest_;
};

}  // namespace memsweep::memory
