// SegmentMemory: the real memory behind one segment of the caching backend.
//
// A fixed segment is one aligned_alloc of its full size. An expandable segment reserves a large
// virtual range with mmap(PROT_NONE) (no memory committed) and commits pages at its end with
// mprotect as it grows, the CPU counterpart of CUDA's cuMemAddressReserve + cuMemMap; shrinking
// decommits the tail (madvise(MADV_DONTNEED) + PROT_NONE), so those pages leave the process.
#pragma once

#include <cstddef>

namespace memsweep::plugins {

class SegmentMemory {
 public:
  // A fixed segment of size bytes (a multiple of 4096); throws std::bad_alloc.
  static SegmentMemory Fixed(size_t size);
  // An expandable segment, empty, able to grow to capacity bytes; throws std::bad_alloc.
  static SegmentMemory Expandable(size_t capacity);

  SegmentMemory(SegmentMemory&& other) noexcept;
  SegmentMemory& operator=(SegmentMemory&& other) noexcept;
  SegmentMemory(const SegmentMemory&) = delete;
  SegmentMemory& operator=(const SegmentMemory&) = delete;
  ~SegmentMemory();

  char* base() const { return base_; }
  size_t size() const { return size_; }           // bytes usable now, from base()
  size_t capacity() const { return capacity_; }   // bytes it may grow to
  bool expandable() const { return expandable_; }

  // Expandable only: commits bytes more at the end (bytes a multiple of the page size).
  // Returns false (nothing changed) when it would pass the capacity or the kernel refuses.
  bool Grow(size_t bytes);
  // Expandable only: decommits the last bytes (a multiple of the page size).
  void Shrink(size_t bytes);
  // Expandable only, inside the first size() bytes (page-aligned ranges): decommits a range, so
  // its pages leave the process, and commits one again. Commit returns false when the kernel
  // refuses.
  void Decommit(size_t offset, size_t bytes);
  bool Commit(size_t offset, size_t bytes);

 private:
  SegmentMemory(char* base, size_t size, size_t capacity, bool expandable)
      : base_(base), size_(size), capacity_(capacity), expandable_(expandable) {}
  void Release();

  char* base_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
  bool expandable_ = false;
};

}  // namespace memsweep::plugins
