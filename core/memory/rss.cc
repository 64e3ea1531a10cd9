#include "core/memory/rss.h"

#include <malloc.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "core/memory/byte_size.h"

namespace memsweep::memory {
namespace {

int64_t ReadKib(const char* file, const std::string& key) {
  std::ifstream status(file);
  std::string line;
  while (std::getline(status, line)) {
    if (line.compare(0, key.size(), key) == 0) {
      return std::stoll(line.substr(key.size())) * 1024;
    }
  }
  return 0;
}

}  // namespace

int64_t CurrentRssBytes() { return ReadKib("/proc/self/status", "VmRSS:"); }
int64_t PeakRssBytes() { return ReadKib("/proc/self/status", "VmHWM:"); }
int64_t HostAvailableBytes() {
  if (const char* setting = std::getenv("MEMSWEEP_HOST_MEMORY"); setting != nullptr && *setting) {
    const std::optional<int64_t> bytes = ParseBytes(setting);
    if (!bytes || *bytes <= 0) {
      throw std::invalid_argument(std::string("MEMSWEEP_HOST_MEMORY=") + setting +
                                  ": write the host memory to assume as a size, such as 16GiB, "
                                  "or unset it to use what the machine has available");
    }
    return *bytes;
  }
  return ReadKib("/proc/meminfo", "MemAvailable:");
}

HeapReading ReadHeap() {
  HeapReading r;
  std::ifstream status("/proc/self/status");  // read once: the three lines of one moment
  for (std::string line; std::getline(status, line);) {
    const auto kib = [&line](const std::string& key, int64_t& bytes) {
      if (line.compare(0, key.size(), key) == 0) bytes = std::stoll(line.substr(key.size())) * 1024;
    };
    kib("VmRSS:", r.resident_bytes);
    kib("RssAnon:", r.resident_anon_bytes);
    kib("RssFile:", r.resident_file_bytes);
  }
  const struct mallinfo2 info = mallinfo2();
  r.heap_bytes = static_cast<int64_t>(info.arena);
  r.heap_in_use_bytes = static_cast<int64_t>(info.uordblks);
  r.heap_free_bytes = static_cast<int64_t>(info.fordblks);
  r.mmapped_bytes = static_cast<int64_t>(info.hblkhd);
  return r;
}

std::string DescribeHeap(const HeapReading& r) {
  return "resident " + FormatBytes(r.resident_bytes) + " (anonymous " +
         FormatBytes(r.resident_anon_bytes) + ", files " + FormatBytes(r.resident_file_bytes) +
         "); glibc heap " + FormatBytes(r.heap_bytes) + " (" + FormatBytes(r.heap_in_use_bytes) +
         " in use, " + FormatBytes(r.heap_free_bytes) + " free), mmapped " +
         FormatBytes(r.mmapped_bytes);
}

bool ResetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  if (!clear) return false;
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

}  // namespace memsweep::memory
