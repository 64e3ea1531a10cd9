// Small helpers every benchmark executable uses: integer options, MiB, the load average it
// reports next to its figures.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace memsweep::bench {

// The value after `name` on the command line ("--rounds 3"), or `fallback`.
inline int ArgInt(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

// The text after `name` on the command line ("--device cuda"), or `fallback`.
inline std::string ArgString(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

inline double MiB(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

// "/proc/loadavg"'s first three fields: benchmarks print it, since a loaded machine skews times.
inline std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

}  // namespace memsweep::bench
