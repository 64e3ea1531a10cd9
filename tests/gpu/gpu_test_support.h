// Support for the gpu tests (ctest label `gpu`): every test skips, saying why, where this process
// cannot use a CUDA device — CI and CPU machines run them as skipped; tools/gpu-check runs them
// on a GPU.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/env/cuda_probe.h"
#include "core/results/loss_verification.h"
#include "support/run_configs.h"
#include "support/tolerances.h"

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

// |a - b| <= rtol(step) * |b| for every step's loss.
inline void ExpectLossesClose(const train::RunResult& actual, const train::RunResult& expected,
                              const std::function<double(int64_t)>& rtol) {
  ASSERT_EQ(actual.steps.size(), expected.steps.size());
  for (size_t i = 0; i < actual.steps.size(); ++i) {
    EXPECT_NEAR(actual.steps[i].loss, expected.steps[i].loss,
                rtol(static_cast<int64_t>(i)) * std::abs(expected.steps[i].loss))
        << "step " << i;
  }
}

// Two fp32 runs of `cfg`'s shape doing the same arithmetic in another order (cuBLAS and the CPU's
// BLAS block their sums differently; TF32 is off for matmuls by LibTorch's default):
// TrajectoryTolerance (support/tolerances.h).
inline std::function<double(int64_t)> SameArithmetic(const config::RunConfig& cfg) {
  const int64_t path = StepPathTerms(cfg);
  return [path](int64_t step) { return TrajectoryTolerance(step, path, kFp32Roundoff); };
}

}  // namespace memsweep::testing_support
