// `memsweep --version` as a user runs it: the LibTorch it was built against and the CUDA facts.
#include <gtest/gtest.h>
#include <torch/version.h>

#include <string>

#include "core/env/environment.h"
#include "support/cli_runner.h"

namespace {

using memsweep::testing_support::Outcome;
using memsweep::testing_support::RunMemsweep;

TEST(VersionFlagTest, NamesLibTorchAndWhetherCudaIsBuiltIn) {
  const Outcome out = RunMemsweep("--version");
  EXPECT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find(std::string("LibTorch ") + TORCH_VERSION), std::string::npos)
      << out.output;
  const bool cuda = memsweep::env::DescribeEnvironment().cuda_build;
  EXPECT_NE(out.output.find(cuda ? "CUDA: built in (runtime " : "CUDA: not built in"),
            std::string::npos)
      << out.output;
}

}  // namespace
