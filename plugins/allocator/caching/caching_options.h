// CachingOptions: the settings of the caching backend (PYTORCH_CUDA_ALLOC_CONF's options) and the
// size arithmetic that follows from them: request rounding and segment sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace memsweep::plugins {

constexpr size_t kMinBlockSize = 512;            // every request is rounded to a multiple of this
constexpr size_t kSmallSize = 1 << 20;           // requests up to 1 MiB use the small pool
constexpr size_t kSmallBuffer = 2 << 20;         // small-pool segment size
constexpr size_t kLargeBuffer = 20 << 20;        // large-pool segment size for requests < 10 MiB
constexpr size_t kMinLargeAlloc = 10 << 20;      // from here, a segment fits the request alone
constexpr size_t kRoundLarge = 2 << 20;          // such segments are rounded up to 2 MiB
// Expandable segments map memory in pages of these sizes (PyTorch: kSmallBuffer for the small
// pool, kLargeBuffer for the large one, the segment_size it gives each ExpandableSegment).
constexpr size_t kSmallExpandablePage = 2 << 20;
constexpr size_t kLargeExpandablePage = 20 << 20;

struct CachingOptions {
  // Blocks of at least this size are never split; 0 or SIZE_MAX = unlimited (set from MiB).
  size_t max_split_size = SIZE_MAX;
  int64_t roundup_power2_divisions = 0;     // 0 = off; else a power of two
  double garbage_collection_threshold = 0;  // fraction of the budget; 0 = off
  bool expandable_segments = false;

  // Builds the options from plugin parameter values; throws std::invalid_argument saying what to
  // change when a value is out of range.
  static CachingOptions FromParams(int64_t max_split_size_mb, int64_t roundup_power2_divisions,
                                   double garbage_collection_threshold, bool expandable_segments);

  // The block size a request of nbytes gets (512-byte multiple, or a power-of-2 division).
  size_t RoundSize(size_t nbytes) const;

  // The same settings as LibTorch's CUDA caching allocator reads them (PYTORCH_ALLOC_CONF, or
  // c10::CachingAllocator::setAllocatorSettings): only the options that differ from the default,
  // comma-separated, booleans as True/False — e.g. "max_split_size_mb:128,expandable_segments:True".
  // Empty when every option is at its default.
  std::string AllocatorConf() const;
};

// Size of a new segment for a block of (rounded) size bytes.
size_t SegmentSize(size_t size);

}  // namespace memsweep::plugins
