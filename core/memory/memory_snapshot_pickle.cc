// PickleMemorySnapshot (allocation_history.h): the dict of torch.cuda.memory._dump_snapshot, as
// torch/csrc/cuda/memory_snapshot.cpp builds it, pickled by LibTorch's Pickler as that file does:
// without type tags (torch::jit::pickle tags every dict and list with a
// torch.jit._pickle.restore_type_tag global) and with untyped (Any) lists (typed ones become
// torch.jit._pickle.build_*list globals): Python's pickle.load reads it without torch.
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include "core/memory/allocation_history.h"

namespace memsweep::memory {
namespace {

using c10::IValue;
using Dict = c10::Dict<IValue, IValue>;
using List = c10::List<IValue>;

// PyTorch's CUDA caching allocator keeps blocks of up to 1 MiB in its small pool.
constexpr int64_t kSmallBlockBytes = 1 << 20;
constexpr int64_t kDevice = 0;
constexpr int64_t kStream = 0;

Dict NewDict() { return Dict(c10::AnyType::get(), c10::AnyType::get()); }
List NewList() { return List(c10::AnyType::get()); }

// Innermost first, as PyTorch's frames are: the AllocationLabel (when one is in force), then the
// stage with its step and micro-batch.
List Frames(const HistoryPosition& position) {
  List frames = NewList();
  const auto add = [&frames](const std::string& name) {
    Dict frame = NewDict();
    frame.insert("filename", "memsweep");
    frame.insert("line", int64_t{0});
    frame.insert("name", name);
    frames.push_back(frame);
  };
  if (position.what != nullptr && position.what[0] != '\0') add(position.what);
  add(PositionName(position));
  return frames;
}

Dict EventDict(const HistoryEvent& event) {
  Dict entry = NewDict();
  entry.insert("action", HistoryActionName(event.action));
  entry.insert("addr", static_cast<int64_t>(event.addr));
  entry.insert("size", event.size);
  entry.insert("stream", kStream);
  entry.insert("time_us", event.time_us);
  entry.insert("frames", Frames(event.position));
  return entry;
}

// A live block as its own segment (the tracking allocator's blocks are separate mallocs).
Dict SegmentDict(const LiveBlock& block) {
  const List frames = block.position ? Frames(*block.position) : NewList();
  Dict block_dict = NewDict();
  block_dict.insert("address", static_cast<int64_t>(block.addr));
  block_dict.insert("size", block.size);
  block_dict.insert("requested_size", block.size);
  block_dict.insert("state", "active_allocated");
  block_dict.insert("frames", frames);
  List blocks = NewList();
  blocks.push_back(block_dict);

  Dict segment = NewDict();
  segment.insert("device", kDevice);
  segment.insert("address", static_cast<int64_t>(block.addr));
  segment.insert("total_size", block.size);
  segment.insert("allocated_size", block.size);
  segment.insert("active_size", block.size);
  segment.insert("requested_size", block.size);
  segment.insert("stream", kStream);
  segment.insert("segment_type", block.size <= kSmallBlockBytes ? "small" : "large");
  segment.insert("segment_pool_id", c10::ivalue::Tuple::create(int64_t{0}, int64_t{0}));
  segment.insert("is_expandable", false);
  segment.insert("frames", frames);
  segment.insert("blocks", blocks);
  return segment;
}

}  // namespace

std::string PickleMemorySnapshot(const std::vector<HistoryEvent>& events,
                                 const std::vector<LiveBlock>& live_blocks) {
  List segments = NewList();
  for (const LiveBlock& block : live_blocks) segments.push_back(SegmentDict(block));
  List trace = NewList();
  for (const HistoryEvent& event : events) trace.push_back(EventDict(event));
  List traces = NewList();
  traces.push_back(trace);

  Dict snapshot = NewDict();
  snapshot.insert("segments", segments);
  snapshot.insert("device_traces", traces);
  snapshot.insert("allocator_settings", NewDict());
  std::string bytes;
  torch::jit::Pickler pickler([&bytes](const char* data, size_t size) { bytes.append(data, size); },
                              /*tensor_table=*/nullptr, /*type_renamer=*/nullptr,
                              /*memoized_class_types=*/nullptr, /*get_tensor_id=*/nullptr,
                              /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(snapshot);
  pickler.stop();
  return bytes;
}

}  // namespace memsweep::memory
