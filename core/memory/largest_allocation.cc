#include "core/memory/largest_allocation.h"

#include "memsweep/allocation_label.h"

namespace memsweep::memory {

void LargestAllocationRecorder::SetPosition(const char* stage, int64_t step, int64_t micro_batch) {
  stage_.store(stage, std::memory_order_relaxed);
  step_.store(step, std::memory_order_relaxed);
  micro_batch_.store(micro_batch, std::memory_order_relaxed);
}

void LargestAllocationRecorder::Record(int64_t bytes) {
  if (bytes <= largest_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes <= value_.bytes) return;
  value_.bytes = bytes;
  value_.stage = stage_.load(std::memory_order_relaxed);
  value_.step = step_.load(std::memory_order_relaxed);
  value_.micro_batch = micro_batch_.load(std::memory_order_relaxed);
  value_.what = CurrentAllocationLabel();
  largest_.store(bytes, std::memory_order_relaxed);
}

LargestAllocation LargestAllocationRecorder::Get() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return value_;
}

void LargestAllocationRecorder::Reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  value_ = LargestAllocation{};
  largest_.store(0, std::memory_order_relaxed);
}

}  // namespace memsweep::memory
