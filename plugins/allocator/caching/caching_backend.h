// CachingBackend: a CPU memory backend that behaves like PyTorch's CUDA caching allocator
// (c10/cuda/CUDACachingAllocator.cpp), so that its settings become measurable on the CPU.
//
// Requests are rounded to 512 bytes (or to power-of-2 divisions) and served from two pools:
// small (requests <= 1 MiB, 2 MiB segments) and large (20 MiB segments for requests < 10 MiB,
// otherwise a segment of the request rounded up to 2 MiB). A freed block stays cached in its
// segment; the next request takes the best-fitting free block (smallest, then lowest address),
// split when the remainder is worth keeping, and freed blocks merge with free neighbours.
// Reserved bytes are the segments' sizes, charged to the device budget; when a new segment would
// not fit, every cached unused segment is released and the allocation retried once, and if it
// still does not fit the budget OOM is thrown (DeviceBudget::Charge).
//
// Not thread-safe by itself: the tracking allocator calls Allocate, Deallocate and EmptyCache
// under its own mutex, so the backend does not lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "caching_block.h"
#include "caching_options.h"
#include "caching_stats.h"
#include "memsweep/memory_backend.h"

namespace memsweep::plugins {

class CachingBackend final : public memory::MemoryBackend {
 public:
  explicit CachingBackend(CachingOptions options = {});
  ~CachingBackend() override;
  CachingBackend(const CachingBackend&) = delete;
  CachingBackend& operator=(const CachingBackend&) = delete;

  void* Allocate(size_t nbytes) override;
  void Deallocate(void* ptr, size_t nbytes) override;
  int64_t ReservedBytes() const override { return stats_.reserved_bytes; }
  // Releases every segment with no block in use (expandable segments: every whole page inside
  // a free block).
  void EmptyCache() override;
  std::string Name() const override { return "caching"; }

  const CachingStats& Stats() const { return stats_; }
  const CachingOptions& Options() const { return options_; }
  // Bytes of the block serving ptr (its rounded size); 0 when ptr is not allocated here.
  size_t BlockSize(const void* ptr) const;

 private:
  using FreeBlocks = std::set<Block*, BlockBySize>;
  struct Pool {
    bool small = false;
    FreeBlocks free;
    Segment* expandable = nullptr;  // the pool's one segment, with expandable_segments
  };

  Pool& PoolFor(size_t size) { return size <= kSmallSize ? small_ : large_; }
  static size_t ExpandablePage(const Pool& pool) {
    return pool.small ? kSmallExpandablePage : kLargeExpandablePage;
  }
  Block* FindFreeBlock(Pool& pool, size_t size);
  bool ShouldSplit(const Block& block, size_t size) const;
  Block* TakeBlock(Pool& pool, Block* block, size_t size);
  Block* NewSegment(Pool& pool, size_t size, size_t requested);
  // Expandable segments (expandable_segment.cc). A request no free block serves: the
  // lowest-address run of free and unmapped blocks that holds it, its missing pages mapped, or
  // else the segment grown at its end; the returned free block is at least size bytes.
  Block* GrowExpandable(Pool& pool, size_t size, size_t requested);
  struct ExpandablePlan {
    Block* start = nullptr;  // the run's first block; null: a new block at the end
    size_t map_bytes = 0;    // bytes the run needs mapped (whole pages)
  };
  ExpandablePlan PlanExpandable(Pool& pool, size_t size) const;
  // Maps the first bytes (rounded up to whole pages, at most the block) of the unmapped block u
  // and merges them with free neighbours; returns the free block that holds them.
  Block* MapFront(Pool& pool, Block* u, size_t bytes);
  // Grows the segment by bytes (whole pages) at its end; returns the free block that ends it.
  Block* GrowEnd(Pool& pool, size_t bytes);
  // Charges bytes to the device budget; first frees the cache and counts a retry when they
  // would not fit. Throws the budget OOM when they still do not.
  // Returns the bytes charged (recompute() after the cache was freed).
  size_t Reserve(size_t requested, const std::function<size_t()>& bytes_needed);
  void Unreserve(size_t bytes);
  void ReleaseSegment(Segment* segment);
  // Fixed (not expandable) segments with nothing allocated in them, oldest first: what emptying
  // the cache and garbage collection release.
  std::vector<Segment*> UnusedFixedSegments() const;
  // Unmaps every whole page inside a free block of the pool's expandable segment; returns the
  // bytes unmapped.
  size_t ReleaseExpandable(Pool& pool);
  void CountSegments();
  void GarbageCollect();
  void UpdatePeak();

  CachingOptions options_;
  Pool small_;
  Pool large_;
  std::vector<std::unique_ptr<Segment>> segments_;  // oldest first
  std::unordered_map<const void*, Block*> allocated_;
  CachingStats stats_;
  uint64_t tick_ = 0;
};

}  // namespace memsweep::plugins
