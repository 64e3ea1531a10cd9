#include "segment_memory.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>
#include <utility>

namespace memsweep::plugins {
namespace {
constexpr size_t kSegmentAlignment = 4096;  // page-aligned, so every 512-byte block is too
}

SegmentMemory SegmentMemory::Fixed(size_t size) {
  void* ptr = std::aligned_alloc(kSegmentAlignment, size);
  if (ptr == nullptr) throw std::bad_alloc();
  return SegmentMemory(static_cast<char*>(ptr), size, size, false);
}

SegmentMemory SegmentMemory::Expandable(size_t capacity) {
  void* ptr = mmap(nullptr, capacity, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (ptr == MAP_FAILED) throw std::bad_alloc();
  return SegmentMemory(static_cast<char*>(ptr), 0, capacity, true);
}

SegmentMemory::SegmentMemory(SegmentMemory&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)),
      expandable_(other.expandable_) {}

SegmentMemory& SegmentMemory::operator=(SegmentMemory&& other) noexcept {
  if (this != &other) {
    Release();
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    expandable_ = other.expandable_;
  }
  return *this;
}

SegmentMemory::~SegmentMemory() { Release(); }

void SegmentMemory::Release() {
  if (base_ == nullptr) return;
  if (expandable_) {
    munmap(base_, capacity_);
  } else {
    std::free(base_);
  }
  base_ = nullptr;
  size_ = capacity_ = 0;
}

bool SegmentMemory::Grow(size_t bytes) {
  if (!expandable_ || bytes > capacity_ - size_) return false;
  if (mprotect(base_ + size_, bytes, PROT_READ | PROT_WRITE) != 0) return false;
  size_ += bytes;
  return true;
}

void SegmentMemory::Shrink(size_t bytes) {
  if (!expandable_ || bytes == 0 || bytes > size_) return;
  Decommit(size_ - bytes, bytes);  // the pages go back to the kernel
  size_ -= bytes;
}

void SegmentMemory::Decommit(size_t offset, size_t bytes) {
  if (!expandable_ || bytes == 0 || offset + bytes > size_) return;
  madvise(base_ + offset, bytes, MADV_DONTNEED);
  mprotect(base_ + offset, bytes, PROT_NONE);
}

bool SegmentMemory::Commit(size_t offset, size_t bytes) {
  if (!expandable_ || offset + bytes > size_) return false;
  return bytes == 0 || mprotect(base_ + offset, bytes, PROT_READ | PROT_WRITE) == 0;
}

}  // namespace memsweep::plugins
