#include "core/env/cache_dir.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <system_error>

namespace memsweep::env {

std::filesystem::path CacheDir(const std::string& what) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (xdg != nullptr && *xdg != '\0') return std::filesystem::path(xdg) / "memsweep" / what;
  if (home != nullptr && *home != '\0') {
    return std::filesystem::path(home) / ".cache" / "memsweep" / what;
  }
  return {};
}

bool WriteCacheFile(const std::filesystem::path& file, const std::string& bytes) {
  std::error_code error;
  std::filesystem::create_directories(file.parent_path(), error);
  if (error) return false;
  // A name of this process and this call: threads and processes may write the same file at once.
  static std::atomic<uint64_t> calls{0};
  const std::filesystem::path temporary = file.string() + ".tmp" + std::to_string(::getpid()) +
                                          "-" + std::to_string(calls.fetch_add(1));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) {
      std::filesystem::remove(temporary, error);
      return false;
    }
  }
  std::filesystem::rename(temporary, file, error);
  if (!error) return true;
  std::filesystem::remove(temporary, error);
  return false;
}

}  // namespace memsweep::env
