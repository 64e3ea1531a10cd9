// The tracking allocator's allocation history: the events of tensors of known sizes (in order,
// with their sizes and frames), read back from the pickle it writes; the ring's limit; nothing
// recorded unless asked.
#include "core/memory/allocation_history.h"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/memory/tracking_allocator.h"
#include "memsweep/allocation_label.h"

namespace memsweep::memory {
namespace {

TrackingAllocator& HistoryTracker() { return TrackingAllocator::Instance(); }

struct Event {
  std::string action;
  int64_t addr;
  int64_t size;
  std::vector<std::string> frames;  // names, innermost first
};

c10::IValue Get(const c10::IValue& dict, const std::string& key) {
  return dict.toGenericDict().at(c10::IValue(key));
}

std::vector<std::string> FrameNames(const c10::IValue& frames) {
  std::vector<std::string> names;
  for (const c10::IValue& frame : frames.toListRef()) {
    EXPECT_EQ(Get(frame, "filename").toStringRef(), "memsweep");
    EXPECT_EQ(Get(frame, "line").toInt(), 0);
    names.push_back(Get(frame, "name").toStringRef());
  }
  return names;
}

// The events of device 0's trace whose address is one of `addrs`, in order.
std::vector<Event> EventsOf(const c10::IValue& snapshot, const std::vector<int64_t>& addrs) {
  const c10::IValue traces = Get(snapshot, "device_traces");
  EXPECT_EQ(traces.toListRef().size(), 1u);
  std::vector<Event> events;
  for (const c10::IValue& entry : traces.toListRef()[0].toListRef()) {
    const int64_t addr = Get(entry, "addr").toInt();
    if (std::find(addrs.begin(), addrs.end(), addr) == addrs.end()) continue;
    EXPECT_EQ(Get(entry, "stream").toInt(), 0);
    EXPECT_GT(Get(entry, "time_us").toInt(), 0);
    events.push_back({Get(entry, "action").toStringRef(), addr, Get(entry, "size").toInt(),
                      FrameNames(Get(entry, "frames"))});
  }
  return events;
}

c10::IValue Unpickle(const std::string& bytes) {
  return torch::jit::unpickle(bytes.data(), bytes.size());
}

int64_t Address(const at::Tensor& t) { return reinterpret_cast<intptr_t>(t.data_ptr()); }

TEST(SnapshotHistory, RecordsAllocAndFreeOfKnownTensorsInOrder) {
  HistoryTracker().Largest().SetPosition("forward", 2, 0);
  HistoryTracker().StartHistory(1000);
  int64_t a_addr = 0, b_addr = 0;
  {
    at::Tensor a = at::empty({1000}, at::kFloat);  // 4000 bytes
    a_addr = Address(a);
    HistoryTracker().Largest().SetPosition("backward", 2, 1);
    AllocationLabel label("logits");
    at::Tensor b = at::empty({3, 7}, at::kDouble);  // 168 bytes
    b_addr = Address(b);
    a.reset();  // a first, then b at the end of the scope
  }
  HistoryTracker().Largest().SetPosition("idle", -1, -1);
  const MemorySnapshot snapshot = HistoryTracker().TakeHistory();
  EXPECT_FALSE(HistoryTracker().RecordingHistory());
  ASSERT_FALSE(snapshot.pickle.empty());
  const c10::IValue dict = Unpickle(snapshot.pickle);
  const std::vector<Event> events = EventsOf(dict, {a_addr, b_addr});
  const std::vector<std::string> forward = {"forward (step 2, micro-batch 0)"};
  const std::vector<std::string> backward = {"logits", "backward (step 2, micro-batch 1)"};
  const std::vector<std::tuple<std::string, int64_t, int64_t, std::vector<std::string>>>
      expected = {{"segment_alloc", a_addr, 4000, forward},
                  {"alloc", a_addr, 4000, forward},
                  {"segment_alloc", b_addr, 168, backward},
                  {"alloc", b_addr, 168, backward},
                  {"free_requested", a_addr, 4000, backward},
                  {"free_completed", a_addr, 4000, backward},
                  {"segment_free", a_addr, 4000, backward},
                  {"free_requested", b_addr, 168, backward},
                  {"free_completed", b_addr, 168, backward},
                  {"segment_free", b_addr, 168, backward}};
  ASSERT_EQ(events.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& [action, addr, size, frames] = expected[i];
    EXPECT_EQ(events[i].action, action) << "event " << i;
    EXPECT_EQ(events[i].addr, addr) << "event " << i;
    EXPECT_EQ(events[i].size, size) << "event " << i;
    EXPECT_EQ(events[i].frames, frames) << "event " << i;
  }
  EXPECT_GE(snapshot.events, static_cast<int64_t>(expected.size()));
}

TEST(SnapshotHistory, SegmentsAreTheBlocksLiveAtTheEnd) {
  at::Tensor before = at::empty({256}, at::kByte);  // allocated before recording: no frames
  HistoryTracker().Largest().SetPosition("optimizer_step", 4, -1);
  HistoryTracker().StartHistory(100);
  at::Tensor during = at::empty({2 << 20}, at::kByte);  // 2 MiB: a "large" segment
  const MemorySnapshot snapshot = HistoryTracker().TakeHistory();
  HistoryTracker().Largest().SetPosition("idle", -1, -1);
  const c10::IValue dict = Unpickle(snapshot.pickle);
  int found = 0;
  for (const c10::IValue& segment : Get(dict, "segments").toListRef()) {
    const int64_t address = Get(segment, "address").toInt();
    if (address != Address(before) && address != Address(during)) continue;
    ++found;
    const bool is_during = address == Address(during);
    const int64_t size = is_during ? (2 << 20) : 256;
    EXPECT_EQ(Get(segment, "device").toInt(), 0);
    EXPECT_EQ(Get(segment, "total_size").toInt(), size);
    EXPECT_EQ(Get(segment, "allocated_size").toInt(), size);
    EXPECT_EQ(Get(segment, "segment_type").toStringRef(), is_during ? "large" : "small");
    const auto blocks = Get(segment, "blocks").toListRef();
    ASSERT_EQ(blocks.size(), 1u);
    EXPECT_EQ(Get(blocks[0], "address").toInt(), address);
    EXPECT_EQ(Get(blocks[0], "size").toInt(), size);
    EXPECT_EQ(Get(blocks[0], "state").toStringRef(), "active_allocated");
    EXPECT_EQ(FrameNames(Get(blocks[0], "frames")),
              is_during ? std::vector<std::string>{"optimizer_step (step 4)"}
                        : std::vector<std::string>{});
  }
  EXPECT_EQ(found, 2);
}

TEST(SnapshotHistory, NothingIsRecordedUnlessAsked) {
  EXPECT_FALSE(HistoryTracker().RecordingHistory());
  at::Tensor t = at::empty({100}, at::kFloat);
  const MemorySnapshot snapshot = HistoryTracker().TakeHistory();
  EXPECT_TRUE(snapshot.pickle.empty());
  EXPECT_EQ(snapshot.events, 0);
}

TEST(SnapshotHistory, TheRingKeepsTheLatestEvents) {
  AllocationHistory history(3);
  for (uint64_t i = 0; i < 5; ++i) {
    history.Record(HistoryAction::kAlloc, 0x1000 + i, static_cast<int64_t>(i), HistoryPosition{});
  }
  const std::vector<HistoryEvent> events = history.Events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].addr, 0x1002u);
  EXPECT_EQ(events[1].addr, 0x1003u);
  EXPECT_EQ(events[2].addr, 0x1004u);
  EXPECT_EQ(history.Dropped(), 2);
}

TEST(SnapshotHistory, PositionsNameStageStepAndMicroBatch) {
  EXPECT_EQ(PositionName({"forward", 2, 0, ""}), "forward (step 2, micro-batch 0)");
  EXPECT_EQ(PositionName({"optimizer_step", 7, -1, ""}), "optimizer_step (step 7)");
  EXPECT_EQ(PositionName({"model", -1, -1, ""}), "model");
}

}  // namespace
}  // namespace memsweep::memory
