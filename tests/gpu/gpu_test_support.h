// Support for the gpu tests (ctest label `gpu`): every test skips, saying why, where this process
// cannot use a CUDA device — CI and CPU machines run them as skipped; tools/gpu-check runs them
// on a GPU.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/env/cuda_probe.h"
#include "support/run_configs.h"

namespace memsweep::testing_support {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const env::CudaProbe& cuda = env::ProbeCuda();
    if (!cuda.usable()) GTEST_SKIP() << "no usable CUDA device here: " << cuda.reason;
  }
};

// TinyRun (or another preset) on cuda:0.
inline config::RunConfig GpuRun(int64_t steps, std::vector<std::string> overrides = {}) {
  overrides.insert(overrides.begin(), "device.type=\"cuda\"");
  return TinyRun(steps, std::move(overrides));
}

// The same configuration on the CPU device.
inline config::RunConfig CpuRun(int64_t steps, std::vector<std::string> overrides = {}) {
  return TinyRun(steps, std::move(overrides));
}

// |a - b| <= rtol * |b| for every step's loss.
inline void ExpectLossesClose(const train::RunResult& actual, const train::RunResult& expected,
                              double first_step_rtol, double later_rtol) {
  ASSERT_EQ(actual.steps.size(), expected.steps.size());
  for (size_t i = 0; i < actual.steps.size(); ++i) {
    const double rtol = i == 0 ? first_step_rtol : later_rtol;
    EXPECT_NEAR(actual.steps[i].loss, expected.steps[i].loss,
                rtol * std::abs(expected.steps[i].loss))
        << "step " << i;
  }
}

}  // namespace memsweep::testing_support
