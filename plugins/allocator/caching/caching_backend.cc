#include "caching_backend.h"

#include <algorithm>
#include <new>

#include "caching_util.h"

namespace memsweep::plugins {

namespace {

memory::DeviceBudget& Device() { return memory::SimulatedDeviceBudget(); }

}  // namespace

CachingBackend::CachingBackend(CachingOptions options) : options_(options) {
  small_.small = true;
  large_.small = false;
}

CachingBackend::~CachingBackend() {
  for (auto& segment : segments_) {
    for (Block* b = segment->first; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
    segment->first = nullptr;
  }
  if (stats_.reserved_bytes > 0) Device().Uncharge(stats_.reserved_bytes);
}

void* CachingBackend::Allocate(size_t nbytes) {
  const size_t size = options_.RoundSize(nbytes);
  Pool& pool = PoolFor(size);
  Block* block = FindFreeBlock(pool, size);
  if (block != nullptr) {
    ++stats_.cache_hits;
  } else {
    GarbageCollect();
    block = options_.expandable_segments ? GrowExpandable(pool, size, nbytes)
                                         : NewSegment(pool, size, nbytes);
  }
  block = TakeBlock(pool, block, size);
  block->allocated = true;
  block->requested = nbytes;
  allocated_.emplace(block->ptr, block);
  stats_.allocated_bytes += static_cast<int64_t>(nbytes);
  UpdatePeak();
  return block->ptr;
}

void CachingBackend::Deallocate(void* ptr, size_t /*nbytes*/) {
  auto it = allocated_.find(ptr);
  if (it == allocated_.end()) return;
  Block* block = it->second;
  allocated_.erase(it);
  stats_.allocated_bytes -= static_cast<int64_t>(block->requested);
  block->allocated = false;
  block->requested = 0;
  Pool& pool = block->segment->small ? small_ : large_;
  // Coalesce with free neighbours in the same segment (erase before the size changes: the free
  // set is ordered by size).
  if (Block* prev = block->prev; FreeMapped(prev)) {
    pool.free.erase(prev);
    AbsorbNext(prev);
    block = prev;
  }
  if (Block* next = block->next; FreeMapped(next)) {
    pool.free.erase(next);
    AbsorbNext(block);
  }
  pool.free.insert(block);
  block->segment->last_used = ++tick_;
}

size_t CachingBackend::BlockSize(const void* ptr) const {
  auto it = allocated_.find(ptr);
  return it == allocated_.end() ? 0 : it->second->size;
}

Block* CachingBackend::FindFreeBlock(Pool& pool, size_t size) {
  Block probe;
  probe.size = size;
  auto it = pool.free.lower_bound(&probe);
  if (it == pool.free.end()) return nullptr;
  Block* block = *it;
  const size_t max_split = options_.max_split_size;
  // As PyTorch does (get_free_block): a block too big to split is not handed to a request it
  // could be split for, and an oversize request only takes an oversize block less than 20 MiB
  // larger than itself. PyTorch applies this to blocks of expandable segments too, although it
  // splits them whatever their size (ShouldSplit): a free run of max_split_size or more inside an
  // expandable segment then serves no smaller request, and the segment grows instead. On an H200
  // that made the real allocator reserve 2.4x the bytes with expandable_segments and
  // max_split_size_mb = 64 together (docs/gpu.md, "Results on a GPU").
  if (size < max_split && block->size >= max_split) return nullptr;
  if (size >= max_split && block->size >= size + kLargeBuffer) return nullptr;
  return block;
}

bool CachingBackend::ShouldSplit(const Block& block, size_t size) const {
  const size_t remaining = block.size - size;
  // As PyTorch's should_split: with expandable segments every block is split, whatever
  // max_split_size says.
  if (block.segment->small || block.segment->memory.expandable()) return remaining >= kMinBlockSize;
  return size < options_.max_split_size && remaining > kSmallSize;
}

Block* CachingBackend::TakeBlock(Pool& pool, Block* block, size_t size) {
  pool.free.erase(block);
  if (ShouldSplit(*block, size)) pool.free.insert(SplitAfter(block, size));
  return block;
}

Block* CachingBackend::NewSegment(Pool& pool, size_t size, size_t requested) {
  const size_t bytes = SegmentSize(size);
  Reserve(requested, [bytes] { return bytes; });
  std::unique_ptr<Segment> segment;
  try {
    segment = std::make_unique<Segment>(SegmentMemory::Fixed(bytes), pool.small);
  } catch (...) {
    Unreserve(bytes);
    throw;
  }
  auto* block = new Block;
  block->ptr = segment->memory.base();
  block->size = bytes;
  block->segment = segment.get();
  segment->first = block;
  segment->last_used = ++tick_;
  segments_.push_back(std::move(segment));
  pool.free.insert(block);
  ++stats_.segments_created;
  CountSegments();
  return block;
}

size_t CachingBackend::Reserve(size_t requested, const std::function<size_t()>& bytes_needed) {
  auto& device = Device();
  size_t bytes = bytes_needed();
  const auto budget = device.Budget();
  if (budget && device.ReservedBytes() + static_cast<int64_t>(bytes) > *budget) {
    // The CUDA way: give every cached unused segment back, then try once more.
    ++stats_.retries;
    EmptyCache();
    bytes = bytes_needed();
  }
  // Throws c10::OutOfMemoryError (and records the OOM event) when it still does not fit.
  device.Charge(static_cast<int64_t>(bytes), static_cast<int64_t>(requested));
  stats_.reserved_bytes += static_cast<int64_t>(bytes);
  return bytes;
}

void CachingBackend::Unreserve(size_t bytes) {
  stats_.reserved_bytes -= static_cast<int64_t>(bytes);
  Device().Uncharge(static_cast<int64_t>(bytes));
}

void CachingBackend::ReleaseSegment(Segment* segment) {
  Pool& pool = segment->small ? small_ : large_;
  Block* block = segment->first;
  pool.free.erase(block);
  delete block;
  segment->first = nullptr;
  Unreserve(segment->memory.size());
  ++stats_.segments_released;
  segments_.erase(std::find_if(segments_.begin(), segments_.end(),
                               [segment](const auto& s) { return s.get() == segment; }));
  CountSegments();
}

std::vector<Segment*> CachingBackend::UnusedFixedSegments() const {
  std::vector<Segment*> unused;
  for (const auto& segment : segments_) {
    const Block* first = segment->first;
    if (!segment->memory.expandable() && first != nullptr && !first->allocated &&
        first->next == nullptr) {
      unused.push_back(segment.get());
    }
  }
  return unused;
}

void CachingBackend::EmptyCache() {
  for (Segment* segment : UnusedFixedSegments()) ReleaseSegment(segment);
  ReleaseExpandable(small_);
  ReleaseExpandable(large_);
}

void CachingBackend::GarbageCollect() {
  if (options_.garbage_collection_threshold <= 0) return;
  auto& device = Device();
  const auto budget = device.Budget();
  if (!budget) return;
  const auto limit = static_cast<int64_t>(options_.garbage_collection_threshold *
                                          static_cast<double>(*budget));
  if (device.ReservedBytes() <= limit) return;
  std::vector<Segment*> unused = UnusedFixedSegments();
  std::stable_sort(unused.begin(), unused.end(),
                   [](const Segment* a, const Segment* b) { return a->last_used < b->last_used; });
  size_t released = 0;
  for (Segment* segment : unused) {
    if (device.ReservedBytes() <= limit) break;
    released += segment->memory.size();
    ReleaseSegment(segment);
  }
  if (released > 0) {
    ++stats_.gc_runs;
    stats_.gc_released_bytes += static_cast<int64_t>(released);
  }
}

void CachingBackend::CountSegments() {
  stats_.segments = std::count_if(segments_.begin(), segments_.end(),
                                  [](const auto& s) { return s->memory.size() > 0; });
  stats_.segments_peak = std::max(stats_.segments_peak, stats_.segments);
}

void CachingBackend::UpdatePeak() {
  if (stats_.reserved_bytes > stats_.peak_reserved_bytes) {
    stats_.peak_reserved_bytes = stats_.reserved_bytes;
    stats_.allocated_at_peak_bytes = stats_.allocated_bytes;
  } else if (stats_.reserved_bytes == stats_.peak_reserved_bytes) {
    stats_.allocated_at_peak_bytes = std::max(stats_.allocated_at_peak_bytes,
                                              stats_.allocated_bytes);
  }
}

}  // namespace memsweep::plugins
