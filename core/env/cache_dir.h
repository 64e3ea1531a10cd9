// memsweep's per-user cache folder: ${XDG_CACHE_HOME:-~/.cache}/memsweep/<what>, where measured
// GEMM peaks (env/gemm_calibration.h) and tokenized corpora (data/token_cache.h) are kept.
//
//   std::filesystem::path dir = CacheDir("gemm");  // empty when neither variable is set
#pragma once

#include <filesystem>
#include <string>

namespace memsweep::env {

// The folder (not created here), or an empty path when neither XDG_CACHE_HOME nor HOME is set.
std::filesystem::path CacheDir(const std::string& what);

// Writes `bytes` to `file` through a temporary file beside it and a rename, so that a reader
// never sees half a file; creates the folder. Returns false (and leaves nothing behind) if any
// of that fails: callers treat the cache as optional.
bool WriteCacheFile(const std::filesystem::path& file, const std::string& bytes);

}  // namespace memsweep::env
