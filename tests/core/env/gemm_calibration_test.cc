// The kept GEMM calibration (core/env/gemm_calibration.h): a file records the figure with when
// and under what load it was measured; a file of the figure alone (written before) still reads;
// re-measuring after a run beat the figure keeps the higher one; the cache folder's files list.
#include "core/env/gemm_calibration.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <ATen/Parallel.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/env/cache_dir.h"
#include "support/scoped_env.h"

namespace memsweep::env {
namespace {

namespace fs = std::filesystem;
using testing_support::ScopedEnv;

// A cache home of its own per test: the process keeps figures by file, so a fresh folder is a
// fresh figure.
fs::path FreshCacheHome(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("memsweep_gemm_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string ReadCalibrationText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(GemmCalibrationTest, KeepsWhenAndUnderWhatLoadItWasMeasured) {
  const fs::path home = FreshCacheHome("kept");
  const ScopedEnv xdg("XDG_CACHE_HOME", home.c_str());
  const GemmCalibration kept = CachedGemmCalibration(at::kFloat);
  EXPECT_GT(kept.flops, 0);
  EXPECT_EQ(kept.file, GemmCalibrationFile(at::kFloat));
  EXPECT_EQ(kept.measured_at.size(), std::string("2026-12-01T09:14:03Z").size()) << kept.measured_at;
  EXPECT_GE(kept.load_average, 0);
  EXPECT_GE(kept.other_busy_cores, 0);
  EXPECT_GE(kept.cores, 1);
  EXPECT_EQ(kept.threads, at::get_num_threads());
  const std::string text = ReadCalibrationText(kept.file);
  for (const char* line : {"\nmeasured_at ", "\nload_average ", "\nother_busy_cores ", "\ncores ",
                           "\nthreads ", "\ndtype Float\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " missing from\n" << text;
  }
  // Listed, read back the same.
  const std::vector<GemmCalibration> listed = KeptGemmCalibrations();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].file, kept.file);
  EXPECT_EQ(listed[0].measured_at, kept.measured_at);
  EXPECT_EQ(listed[0].cores, kept.cores);
  EXPECT_NE(listed[0].Describe().find("GFLOP/s (Float), measured " + kept.measured_at),
            std::string::npos)
      << listed[0].Describe();
}

TEST(GemmCalibrationTest, AFileOfTheFigureAloneStillReads) {
  const fs::path home = FreshCacheHome("old");
  const ScopedEnv xdg("XDG_CACHE_HOME", home.c_str());
  const std::string file = GemmCalibrationFile(at::kFloat);
  ASSERT_TRUE(WriteCacheFile(file, "4.52e+11\n"));
  const GemmCalibration kept = CachedGemmCalibration(at::kFloat);
  EXPECT_EQ(kept.flops, 4.52e11);
  EXPECT_EQ(kept.measured_at, "");
  EXPECT_FALSE(kept.TakenUnderLoad());
  EXPECT_NE(kept.Describe().find("unknown time under an unknown load"), std::string::npos)
      << kept.Describe();
}

TEST(GemmCalibrationTest, RemeasuringKeepsTheHigherFigureUnlessToldToReplaceIt) {
  const fs::path home = FreshCacheHome("again");
  const ScopedEnv xdg("XDG_CACHE_HOME", home.c_str());
  const std::string file = GemmCalibrationFile(at::kFloat);
  // Higher than any CPU: a run that beat it would not make the figure fall.
  ASSERT_TRUE(WriteCacheFile(file, "1e+20\n"));
  EXPECT_EQ(RecalibrateGemm(at::kFloat, Recalibrate::kIfHigher).flops, 1e20);
  EXPECT_EQ(CachedGemmPeakFlops(at::kFloat), 1e20);
  // Lower than any CPU: replaced.
  const fs::path other = FreshCacheHome("again2");
  const ScopedEnv xdg2("XDG_CACHE_HOME", other.c_str());
  const std::string low_file = GemmCalibrationFile(at::kFloat);
  ASSERT_TRUE(WriteCacheFile(low_file, "1000\n"));
  const GemmCalibration raised = RecalibrateGemm(at::kFloat, Recalibrate::kIfHigher);
  EXPECT_GT(raised.flops, 1000);
  EXPECT_FALSE(raised.measured_at.empty());
  EXPECT_EQ(CachedGemmPeakFlops(at::kFloat), raised.flops);
  EXPECT_GT(std::stod(ReadCalibrationText(low_file)), 1000);
  // `memsweep calibrate` replaces whatever was kept.
  {
    const ScopedEnv back("XDG_CACHE_HOME", home.c_str());
    const GemmCalibration replaced = RecalibrateGemm(at::kFloat, Recalibrate::kAlways);
    EXPECT_LT(replaced.flops, 1e20);
    EXPECT_EQ(CachedGemmPeakFlops(at::kFloat), replaced.flops);
  }
}

TEST(GemmCalibrationTest, AFigureTakenWhileOthersWereBusyIsRecognised) {
  GemmCalibration c;
  c.flops = 4.52e11;
  c.measured_at = "2026-11-27T09:00:00Z";
  c.cores = 2;
  c.other_busy_cores = 1.6;
  EXPECT_TRUE(c.TakenUnderLoad());
  c.other_busy_cores = 0.1;
  c.load_average = 3.0;  // the busy time measured counts over the load average
  EXPECT_FALSE(c.TakenUnderLoad());
  c.other_busy_cores = -1;
  EXPECT_TRUE(c.TakenUnderLoad());
  EXPECT_EQ(c.Describe(),
            "452.0 GFLOP/s, measured 2026-11-27T09:00:00Z on 2 cores; load average 3.00");
}

}  // namespace
}  // namespace memsweep::env
