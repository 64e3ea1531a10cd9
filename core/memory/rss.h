// Resident-set-size readings of this process: the outside view of memory, which includes what
// BLAS/oneDNN scratch buffers and the allocator's own overhead take (the tracking allocator
// sees only tensor storage).
//
//   ResetPeakRss();            // start a fresh high-water mark (Linux >= 4.0)
//   ... run ...
//   int64_t hwm = PeakRssBytes();
#pragma once

#include <cstdint>
#include <string>

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

// Where this process's resident memory is, for MEMSWEEP_HEAP_TRACE (docs/cli.md): the resident
// set split as the kernel counts it, and glibc's heap (mallinfo2, every arena) — the pages it
// holds, in use or free, and its blocks served by mmap.
struct HeapReading {
  int64_t resident_bytes = 0;       // VmRSS
  int64_t resident_anon_bytes = 0;  // RssAnon: heap, stacks, anonymous maps
  int64_t resident_file_bytes = 0;  // RssFile: the libraries' and mapped files' pages
  int64_t heap_bytes = 0;           // glibc's arenas (mallinfo2.arena)
  int64_t heap_in_use_bytes = 0;    // their chunks in use (uordblks)
  int64_t heap_free_bytes = 0;      // their free chunks, kept for reuse (fordblks)
  int64_t mmapped_bytes = 0;        // blocks glibc served by mmap (hblkhd)
};
HeapReading ReadHeap();
// "resident 571.08 MiB (anonymous 376.62 MiB, files 194.46 MiB); glibc heap 281.89 MiB
// (123.25 MiB in use, 158.64 MiB free), mmapped 1.90 MiB"
std::string DescribeHeap(const HeapReading& reading);

}  // namespace memsweep::memory
