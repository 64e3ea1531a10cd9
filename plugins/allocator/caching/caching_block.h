// Block and Segment: the bookkeeping of the caching backend. A segment is one piece of memory
// reserved from the device; it is cut into blocks (a doubly linked list in address order), each
// either handed out to a tensor or free (cached) for reuse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "segment_memory.h"

namespace memsweep::plugins {

struct Segment;

struct Block {
  char* ptr = nullptr;
  size_t size = 0;            // bytes of the block (a multiple of 512)
  size_t requested = 0;       // bytes the tensor asked for, while allocated
  bool allocated = false;
  bool mapped = true;         // false: a range of an expandable segment with no memory behind it
  Segment* segment = nullptr;
  Block* prev = nullptr;      // neighbours in the same segment, by address
  Block* next = nullptr;
};

struct Segment {
  explicit Segment(SegmentMemory m, bool small_pool) : memory(std::move(m)), small(small_pool) {}
  SegmentMemory memory;
  bool small;                 // which pool its blocks belong to
  uint64_t last_used = 0;     // tick of the last free into it: garbage collection frees oldest
  Block* first = nullptr;     // lowest-address block; null for an empty expandable segment
  Block* Last() const {
    Block* b = first;
    while (b != nullptr && b->next != nullptr) b = b->next;
    return b;
  }
};

// Free blocks in best-fit order: smallest first, then lowest address.
struct BlockBySize {
  bool operator()(const Block* a, const Block* b) const {
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};

}  // namespace memsweep::plugins
