// memsweep's cache folder and cache-file writes (core/env/cache_dir.h): the folder follows
// XDG_CACHE_HOME, then HOME; a write lands whole or reports failure, leaving no temporary behind.
#include "core/env/cache_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "support/scoped_env.h"

namespace memsweep::env {
namespace {

using testing_support::ScopedEnv;

TEST(CacheDirTest, FollowsXdgCacheHomeThenHome) {
  {
    const ScopedEnv xdg("XDG_CACHE_HOME", "/x/cache");
    const ScopedEnv home("HOME", "/h");
    EXPECT_EQ(CacheDir("gemm"), std::filesystem::path("/x/cache/memsweep/gemm"));
  }
  {
    const ScopedEnv xdg("XDG_CACHE_HOME", "");
    const ScopedEnv home("HOME", "/h");
    EXPECT_EQ(CacheDir("tokens"), std::filesystem::path("/h/.cache/memsweep/tokens"));
  }
  const ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  const ScopedEnv home("HOME", nullptr);
  EXPECT_TRUE(CacheDir("gemm").empty());
}

TEST(CacheDirTest, AWriteLandsWholeOrFailsWithoutLeavingATemporary) {
  const std::filesystem::path dir =
      ::testing::TempDir() + "cache-dir-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  const std::filesystem::path file = dir / "sub" / "figure";
  ASSERT_TRUE(WriteCacheFile(file, "first\n"));  // creates the folders
  ASSERT_TRUE(WriteCacheFile(file, "second\n"));  // replaces
  std::ifstream in(file);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()),
            "second\n");

  // A folder where the file should go: the rename fails, and is reported.
  const std::filesystem::path blocked = dir / "blocked";
  std::filesystem::create_directories(blocked / "inside");
  EXPECT_FALSE(WriteCacheFile(blocked, "x"));
  // A file where a folder should go.
  EXPECT_FALSE(WriteCacheFile(file / "below", "x"));
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace memsweep::env
