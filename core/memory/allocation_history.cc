#include "core/memory/allocation_history.h"

#include <algorithm>
#include <chrono>

namespace memsweep::memory {

const char* HistoryActionName(HistoryAction action) {
  switch (action) {
    case HistoryAction::kSegmentAlloc: return "segment_alloc";
    case HistoryAction::kAlloc: return "alloc";
    case HistoryAction::kFreeRequested: return "free_requested";
    case HistoryAction::kFreeCompleted: return "free_completed";
    case HistoryAction::kSegmentFree: return "segment_free";
  }
  return "alloc";
}

std::string PositionName(const HistoryPosition& position) {
  std::string name = position.stage;
  if (position.step < 0) return name;
  name += " (step " + std::to_string(position.step);
  if (position.micro_batch >= 0) name += ", micro-batch " + std::to_string(position.micro_batch);
  return name + ")";
}

AllocationHistory::AllocationHistory(int64_t max_entries)
    : capacity_(static_cast<size_t>(std::max<int64_t>(1, max_entries))) {
  // The ring grows as events come (up to its capacity): a large limit costs nothing up front.
  ring_.reserve(std::min<size_t>(capacity_, 1 << 16));
}

void AllocationHistory::Record(HistoryAction action, uint64_t addr, int64_t size,
                               const HistoryPosition& position) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  HistoryEvent event{action, addr, size,
                     std::chrono::duration_cast<std::chrono::microseconds>(now).count(), position};
  if (ring_.size() < capacity_) {
    ring_.push_back(event);
    return;
  }
  ring_[next_] = event;
  next_ = (next_ + 1) % capacity_;
  ++dropped_;
}

std::vector<HistoryEvent> AllocationHistory::Events() const {
  std::vector<HistoryEvent> events;
  events.reserve(ring_.size());
  events.insert(events.end(), ring_.begin() + static_cast<std::ptrdiff_t>(next_), ring_.end());
  events.insert(events.end(), ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(next_));
  return events;
}

}  // namespace memsweep::memory
