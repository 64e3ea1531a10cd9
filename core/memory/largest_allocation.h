// LargestAllocationRecorder: the largest single allocation of a run, with where it happened —
// the stage, step and micro-batch then running and the innermost AllocationLabel of the
// allocating thread. The CPU's tracking allocator records every allocation; on CUDA the caching
// allocator's trace (cuda_meter.cc) records each block it hands out (its size rounded as the
// allocator rounds requests).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace memsweep::memory {

struct LargestAllocation {
  int64_t bytes = 0;
  std::string stage;         // "forward", "model", ... ("idle" between stages)
  int64_t step = -1;         // optimizer step; -1 in the set-up stages
  int64_t micro_batch = -1;  // within the step; -1 outside forward and backward
  std::string what;          // the AllocationLabel in force; "" when none was
};

class LargestAllocationRecorder {
 public:
  // Where the run is now; `stage` must be a string literal.
  void SetPosition(const char* stage, int64_t step, int64_t micro_batch);
  // An allocation of `bytes`: kept when it is the largest so far. Cheap when it is not.
  void Record(int64_t bytes);
  LargestAllocation Get() const;
  void Reset();
  // The position last set (stage, step, micro-batch).
  const char* Stage() const { return stage_.load(std::memory_order_relaxed); }
  int64_t Step() const { return step_.load(std::memory_order_relaxed); }
  int64_t MicroBatch() const { return micro_batch_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> largest_{0};
  std::atomic<const char*> stage_{"idle"};
  std::atomic<int64_t> step_{-1};
  std::atomic<int64_t> micro_batch_{-1};
  mutable std::mutex mutex_;
  LargestAllocation value_;  // guarded by mutex_
};

}  // namespace memsweep::memory
