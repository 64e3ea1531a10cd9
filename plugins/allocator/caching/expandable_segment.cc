// The expandable-segment side of CachingBackend (caching_backend.h), as PyTorch's CUDA caching
// allocator handles expandable_segments (find_expandable_block, map_block and unmap_block in
// c10/cuda/CUDACachingAllocator.cpp):
// - Releasing the cache unmaps every whole page inside a free block, wherever the block lies in
//   the segment. The unmapped range becomes an unmapped block: it holds no memory, so it serves
//   no request from the free list.
// - A request that no free block serves takes the lowest-address run of free and unmapped blocks
//   that holds it (a free block right before an unmapped one starts the run), mapping only the
//   pages it lacks; the segment's end counts as unmapped space without limit, so with no run
//   inside, the segment grows at its end.
// Pages are 2 MiB in the small pool and 20 MiB in the large one (ExpandablePage).
#include <algorithm>
#include <new>
#include <optional>

#include "caching_backend.h"
#include "caching_util.h"

namespace memsweep::plugins {
namespace {

constexpr size_t kExpandableCapacity = size_t{64} << 30;  // virtual range per expandable segment

// The bytes a run starting at `start` must map to hold size bytes (whole pages of each unmapped
// block, at most the block; what the run lacks at the segment's end, in whole pages), or
// nothing when an allocated block ends the run first.
std::optional<size_t> BytesToMap(const Block* start, size_t size, size_t page) {
  size_t have = 0, to_map = 0;
  for (const Block* b = start; have < size; b = b->next) {
    if (b == nullptr) return to_map + RoundUp(size - have, page);  // the segment's end
    if (b->allocated) return std::nullopt;
    if (b->mapped) {
      have += b->size;
    } else {
      const size_t mapped = std::min(b->size, RoundUp(size - have, page));
      to_map += mapped;
      have += mapped;
    }
  }
  return to_map;
}

}  // namespace

CachingBackend::ExpandablePlan CachingBackend::PlanExpandable(Pool& pool, size_t size) const {
  const size_t page = ExpandablePage(pool);
  const Segment* segment = pool.expandable;
  // Unmapped ranges inside the segment first, lowest address first.
  for (Block* u = segment->first; u != nullptr; u = u->next) {
    if (u->mapped) continue;
    Block* start = FreeMapped(u->prev) ? u->prev : u;
    if (auto bytes = BytesToMap(start, size, page)) return {start, *bytes};
  }
  // The segment's end: its last block if free, and new pages after it.
  Block* last = segment->Last();
  Block* start = FreeMapped(last) ? last : nullptr;
  return {start, *BytesToMap(start, size, page)};
}

Block* CachingBackend::GrowExpandable(Pool& pool, size_t size, size_t requested) {
  if (pool.expandable == nullptr) {
    segments_.push_back(
        std::make_unique<Segment>(SegmentMemory::Expandable(kExpandableCapacity), pool.small));
    pool.expandable = segments_.back().get();
  }
  // Charged before anything is mapped; freeing the cache first (Reserve) changes the plan, so
  // the plan kept is the one made last.
  ExpandablePlan plan;
  Reserve(requested, [&] {
    plan = PlanExpandable(pool, size);
    return plan.map_bytes;
  });
  const size_t page = ExpandablePage(pool);
  Block* block = plan.start;
  if (block == nullptr) {
    block = GrowEnd(pool, RoundUp(size, page));
  } else if (!block->mapped) {
    block = MapFront(pool, block, std::min(block->size, size));
  }
  // Each step maps the front of the unmapped block after it, or grows the segment's end, and
  // merges the new pages into it.
  while (block->size < size) {
    Block* next = block->next;
    block = next == nullptr ? GrowEnd(pool, RoundUp(size - block->size, page))
                            : MapFront(pool, next, size - block->size);
  }
  pool.expandable->last_used = ++tick_;
  if (plan.map_bytes > 0) ++stats_.segments_created;
  CountSegments();
  return block;
}

Block* CachingBackend::MapFront(Pool& pool, Block* u, size_t bytes) {
  Segment* segment = u->segment;
  const size_t mapped = std::min(u->size, RoundUp(bytes, ExpandablePage(pool)));
  if (!segment->memory.Commit(static_cast<size_t>(u->ptr - segment->memory.base()), mapped)) {
    throw std::bad_alloc();
  }
  if (mapped < u->size) SplitAfter(u, mapped);  // the rest stays unmapped, after the front
  u->mapped = true;
  Block* block = u;
  if (FreeMapped(block->prev)) {
    pool.free.erase(block->prev);
    block = block->prev;
    AbsorbNext(block);
  }
  if (FreeMapped(block->next)) {
    pool.free.erase(block->next);
    AbsorbNext(block);
  }
  pool.free.insert(block);
  return block;
}

Block* CachingBackend::GrowEnd(Pool& pool, size_t bytes) {
  Segment* segment = pool.expandable;
  const size_t old_size = segment->memory.size();
  if (!segment->memory.Grow(bytes)) throw std::bad_alloc();
  Block* last = segment->Last();
  if (FreeMapped(last)) {
    pool.free.erase(last);
    last->size += bytes;
  } else {
    auto* block = new Block;
    block->ptr = segment->memory.base() + old_size;
    block->size = bytes;
    block->segment = segment;
    block->prev = last;
    if (last != nullptr) {
      last->next = block;
    } else {
      segment->first = block;
    }
    last = block;
  }
  pool.free.insert(last);
  return last;
}

size_t CachingBackend::ReleaseExpandable(Pool& pool) {
  Segment* segment = pool.expandable;
  if (segment == nullptr) return 0;
  const size_t page = ExpandablePage(pool);
  char* base = segment->memory.base();
  size_t released = 0;
  for (Block* b = segment->first; b != nullptr; b = b->next) {
    if (!FreeMapped(b)) continue;
    const auto offset = static_cast<size_t>(b->ptr - base);
    const size_t begin = RoundUp(offset, page), end = RoundDown(offset + b->size, page);
    if (begin >= end) continue;  // no whole page inside: the pages under used blocks stay
    pool.free.erase(b);
    // The whole pages become the unmapped middle; what lies before and after them (parts of the
    // pages under used blocks) stays free.
    if (begin > offset) {  // split first: the free set is ordered by size
      Block* head = b;
      b = SplitAfter(head, begin - offset);
      pool.free.insert(head);
    }
    if (end - begin < b->size) pool.free.insert(SplitAfter(b, end - begin));
    b->mapped = false;
    segment->memory.Decommit(begin, end - begin);
    released += end - begin;
    // Neighbouring unmapped ranges are one.
    if (b->prev != nullptr && !b->prev->mapped) {
      b = b->prev;
      AbsorbNext(b);
    }
    if (b->next != nullptr && !b->next->mapped) AbsorbNext(b);
  }
  // An unmapped range at the end is given back to the address space: the segment ends earlier.
  if (Block* last = segment->Last(); last != nullptr && !last->mapped) {
    segment->memory.Shrink(last->size);
    if (last->prev != nullptr) {
      last->prev->next = nullptr;
    } else {
      segment->first = nullptr;
    }
    delete last;
  }
  if (released > 0) {
    Unreserve(released);
    ++stats_.segments_released;
    CountSegments();
  }
  return released;
}

}  // namespace memsweep::plugins
