// Resident-set-size readings of this process: the outside view of memory, which includes what
// BLAS/oneDNN scratch buffers and the allocator's own overhead take (the tracking allocator
// sees only tensor storage).
//
//   ResetPeakRss();            // start a fresh high-water mark (Linux >= 4.0)
//   ... run ...
//   int64_t hwm = PeakRssBytes();
#pragma once

#include <cstdint>

namespace memsweep::memory {

// VmRSS from /proc/self/status, in bytes (0 if unavailable).
int64_t CurrentRssBytes();
// VmHWM from /proc/self/status, in bytes (0 if unavailable).
int64_t PeakRssBytes();
// Resets VmHWM to the current RSS (writes "5" to /proc/self/clear_refs). Returns false when the
// kernel refuses; the peak then covers the whole process lifetime.
bool ResetPeakRss();
// The host memory new processes can take without swapping, in bytes: MEMSWEEP_HOST_MEMORY when
// set (a size such as "16GiB": to plan for a smaller machine, as `[device] emulate` does for a
// GPU), else MemAvailable from /proc/meminfo (0 if unavailable). Throws std::invalid_argument,
// naming the variable, for a value that is no size.
int64_t HostAvailableBytes();

}  // namespace memsweep::memory
