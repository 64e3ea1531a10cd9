// CachingStats: what the caching backend counts, for the run's results ("caching.*").
#pragma once

#include <cstdint>

namespace memsweep::plugins {

struct CachingStats {
  int64_t reserved_bytes = 0;           // sum of segment sizes now
  int64_t peak_reserved_bytes = 0;
  int64_t allocated_bytes = 0;          // bytes tensors asked for, now
  int64_t allocated_at_peak_bytes = 0;  // allocated bytes when reserved was at its peak
  int64_t segments = 0;                 // segments holding memory now
  int64_t segments_peak = 0;
  int64_t segments_created = 0;         // new segments, or growths of an expandable segment
  int64_t segments_released = 0;        // segments (or expandable tails) given back
  int64_t retries = 0;                  // allocations that freed the cache and tried again
  int64_t gc_runs = 0;                  // garbage collections that released something
  int64_t gc_released_bytes = 0;
  int64_t cache_hits = 0;               // allocations served by a cached free block

  // 1 - allocated/reserved when reserved peaked: the share of the peak held by nothing.
  double FragmentationAtPeak() const {
    if (peak_reserved_bytes <= 0) return 0.0;
    return 1.0 - static_cast<double>(allocated_at_peak_bytes) /
                     static_cast<double>(peak_reserved_bytes);
  }
};

}  // namespace memsweep::plugins
