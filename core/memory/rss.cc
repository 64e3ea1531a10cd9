#include "core/memory/rss.h"

#include <fstream>
#include <string>

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
int64_t HostAvailableBytes() { return ReadKib("/proc/meminfo", "MemAvailable:"); }

bool ResetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  if (!clear) return false;
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

}  // namespace memsweep::memory
