// Small helpers shared by the caching backend's files: page rounding and merging neighbours.
#pragma once

#include <cstddef>

#include "caching_block.h"

namespace memsweep::plugins {

inline size_t RoundUp(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}
inline size_t RoundDown(size_t value, size_t multiple) { return value / multiple * multiple; }

// Merges `left->next` (its neighbour in the same segment) into `left` and deletes it.
inline void AbsorbNext(Block* left) {
  Block* right = left->next;
  left->size += right->size;
  left->next = right->next;
  if (right->next != nullptr) right->next->prev = left;
  delete right;
}

// Splits b after its first `head` bytes (0 < head < b->size): b keeps them, a new block right
// after it, in the same segment and equally mapped, takes the rest. Returns the new block.
inline Block* SplitAfter(Block* b, size_t head) {
  auto* rest = new Block;
  rest->ptr = b->ptr + head;
  rest->size = b->size - head;
  rest->mapped = b->mapped;
  rest->segment = b->segment;
  rest->prev = b;
  rest->next = b->next;
  if (b->next != nullptr) b->next->prev = rest;
  b->next = rest;
  b->size = head;
  return rest;
}

// A free block with memory behind it (an unmapped block of an expandable segment has none).
inline bool FreeMapped(const Block* b) { return b != nullptr && !b->allocated && b->mapped; }

}  // namespace memsweep::plugins
