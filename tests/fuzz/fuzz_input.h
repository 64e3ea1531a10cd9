// Helpers shared by memsweep's libFuzzer targets (tests/fuzz/*_fuzz.cc, built by the `fuzz`
// preset, run by tools/fuzz): a per-process scratch folder, and writing the input as a file for
// readers that take a path.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace memsweep::fuzz {

// /tmp/memsweep-fuzz-<pid>/, made once.
inline const std::filesystem::path& ScratchDir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("memsweep-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(path);
    return path;
  }();
  return dir;
}

// Writes `bytes` to ScratchDir()/name and returns the path.
inline std::string WriteScratch(const std::string& name, std::string_view bytes) {
  const std::string path = (ScratchDir() / name).string();
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace memsweep::fuzz
