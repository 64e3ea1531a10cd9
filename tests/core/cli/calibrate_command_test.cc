// `memsweep calibrate` and `memsweep --version` as a user runs them: the GEMM peaks MFU divides
// by are measured afresh and kept with when and under what load; --version and --show list
// them, a figure from an older memsweep (the number alone) included.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using memsweep::testing_support::FreshTempDir;
using memsweep::testing_support::Outcome;
using memsweep::testing_support::RunMemsweep;

TEST(CalibrateCommandTest, MeasuresKeepsAndListsTheFigureWithItsCircumstances) {
  const fs::path home = FreshTempDir("calibrate");
  const std::string env = "XDG_CACHE_HOME=" + home.string();
  Outcome out = RunMemsweep("--version", env);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("GEMM calibrations (MFU's peaks) kept in " +
                            (home / "memsweep" / "gemm").string() + ": none yet"),
            std::string::npos)
      << out.output;

  out = RunMemsweep("calibrate --dtype float32 --threads 1", env);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("float32 on cpu: "), std::string::npos) << out.output;
  EXPECT_NE(out.output.find(" GFLOP/s (Float), measured "), std::string::npos) << out.output;
  EXPECT_NE(out.output.find(" with 1 thread on "), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("; load average "), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("  kept in " + (home / "memsweep" / "gemm").string() + "/"),
            std::string::npos)
      << out.output;

  // A figure from an older memsweep: the number alone.
  const fs::path old = home / "memsweep" / "gemm" / "old-cpu.Float.torch-1.13.1.calibration-2";
  std::ofstream(old) << "4.1e+11\n";
  for (const char* command : {"--version", "calibrate --show"}) {
    out = RunMemsweep(command, env);
    ASSERT_EQ(out.exit_code, 0) << command << "\n" << out.output;
    EXPECT_NE(out.output.find(".threads-1."), std::string::npos) << out.output;
    EXPECT_NE(out.output.find(".Float.torch-"), std::string::npos) << out.output;
    EXPECT_NE(out.output.find("\n    410.0 GFLOP/s, measured at an unknown time under an unknown "
                              "load (an older file)\n"),
              std::string::npos)
        << out.output;
    EXPECT_NE(out.output.find("`memsweep calibrate` measures them afresh"), std::string::npos)
        << out.output;
  }
}

TEST(CalibrateCommandTest, RefusesAnUnknownDevice) {
  const Outcome out = RunMemsweep("calibrate --device tpu");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("--device tpu: expected cpu, cuda or cuda:N"), std::string::npos)
      << out.output;
}

}  // namespace
