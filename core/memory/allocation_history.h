// AllocationHistory: the tracking allocator's record of allocations and frees, kept while a run
// asks for it ([experiment] memory_history; docs/snapshot.md), and written as the pickle that
// torch.cuda.memory._dump_snapshot writes, which PyTorch's memory viewer
// (pytorch.org/memory_viz) opens.
//
// Each event names where the run was: the stage, step and micro-batch then running (the
// position MemoryProbe sets) and the innermost AllocationLabel. In the viewer these are the
// event's frames: {filename "memsweep", line 0, name "forward (step 2, micro-batch 0)"}.
//
//   AllocationHistory history(100000);             // keeps the latest 100,000 events
//   history.Record(HistoryAction::kAlloc, addr, 4096, position);
//   std::string bytes = PickleMemorySnapshot(history.Events(), live_blocks);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memsweep::memory {

// PyTorch's TraceEntry actions that the tracking allocator produces. It has no segments of its
// own: every block is its own malloc, so each block is also a segment (segment_alloc before its
// alloc, segment_free after its free_completed), as reserved == allocated for the system backend.
enum class HistoryAction : uint8_t {
  kSegmentAlloc,
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentFree,
};

// PyTorch's name of the action ("segment_alloc", "alloc", ...).
const char* HistoryActionName(HistoryAction action);

// Where the run was at an event. `stage` and `what` are string literals (or outlive the run).
struct HistoryPosition {
  const char* stage = "idle";
  int64_t step = -1;         // -1 in the set-up stages
  int64_t micro_batch = -1;  // -1 outside forward and backward
  const char* what = "";     // the AllocationLabel in force, "" when none
};

// The frame name of a position: "forward (step 2, micro-batch 0)", "optimizer_step (step 2)",
// "model".
std::string PositionName(const HistoryPosition& position);

struct HistoryEvent {
  HistoryAction action = HistoryAction::kAlloc;
  uint64_t addr = 0;
  int64_t size = 0;
  int64_t time_us = 0;  // microseconds since the Unix epoch
  HistoryPosition position;
};

// A block still allocated when the snapshot is taken; `position` is nullopt for a block
// allocated before recording started (the viewer then says so).
struct LiveBlock {
  uint64_t addr = 0;
  int64_t size = 0;
  std::optional<HistoryPosition> position;
};

// A snapshot ready to store: the pickle's bytes and how many trace events it holds.
struct MemorySnapshot {
  std::string pickle;
  int64_t events = 0;
};

// The format name stored with a snapshot (memory_snapshots.format).
inline constexpr const char* kMemorySnapshotFormat = "pytorch_memory_snapshot";

// A ring of the latest `max_entries` events (PyTorch's max_entries). Not thread-safe: the
// tracking allocator records under its lock.
class AllocationHistory {
 public:
  explicit AllocationHistory(int64_t max_entries);
  void Record(HistoryAction action, uint64_t addr, int64_t size, const HistoryPosition& position);
  // The kept events, oldest first.
  std::vector<HistoryEvent> Events() const;
  // Events recorded but no longer kept (the ring overwrote them).
  int64_t Dropped() const { return dropped_; }

 private:
  std::vector<HistoryEvent> ring_;
  size_t capacity_;
  size_t next_ = 0;  // where the next event goes once the ring is full
  int64_t dropped_ = 0;
};

// The dict torch.cuda.memory._dump_snapshot pickles, for device 0, stream 0: `segments` (one per
// live block, holding that block), `device_traces` ([events]) and `allocator_settings` ({}).
// Written with LibTorch's pickler from untyped dicts and lists only: Python's pickle.load reads
// it without torch.
std::string PickleMemorySnapshot(const std::vector<HistoryEvent>& events,
                                 const std::vector<LiveBlock>& live_blocks);

}  // namespace memsweep::memory
