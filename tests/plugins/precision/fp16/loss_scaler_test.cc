// precision/fp16's loss scaler on CPU tensors (ATen's _amp kernels have CPU implementations): the
// arithmetic is the same on CUDA, where the plugin runs (the gpu tests train with it).
#include "precision/fp16/loss_scaler.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>

#include "core/config/config_error.h"
#include "support/run_configs.h"

namespace memsweep::plugins {
namespace {

const c10::Device kCpu(c10::kCPU);

TEST(LossScalerTest, ScalesTheLossAndUnscalesGradientsExactly) {
  LossScaler scaler({/*init_scale=*/1024.0, 2.0, 0.5, 3}, kCpu);
  EXPECT_DOUBLE_EQ(scaler.Scale(at::full({}, 0.5)).item<double>(), 512.0);
  at::Tensor g = at::full({4}, 2048.0);
  EXPECT_FALSE(scaler.UnscaleAndCheck({g}));
  EXPECT_TRUE(at::equal(g, at::full({4}, 2.0)));  // powers of two: exact
}

TEST(LossScalerTest, AnOverflowIsReportedAndBacksTheScaleOff) {
  LossScaler scaler({1024.0, 2.0, 0.5, 3}, kCpu);
  at::Tensor clean = at::ones({3});
  at::Tensor bad = at::ones({2});
  bad[1] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(scaler.UnscaleAndCheck({clean, bad}));
  scaler.Update();
  EXPECT_DOUBLE_EQ(scaler.CurrentScale(), 512.0);
  at::Tensor nan = at::full({1}, std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(scaler.UnscaleAndCheck({nan}));
  scaler.Update();
  EXPECT_DOUBLE_EQ(scaler.CurrentScale(), 256.0);
}

TEST(LossScalerTest, TheScaleGrowsAfterGrowthIntervalCleanStepsInARow) {
  LossScaler scaler({1024.0, 2.0, 0.5, 3}, kCpu);
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(scaler.UnscaleAndCheck({at::ones({2})}));
    scaler.Update();
    EXPECT_DOUBLE_EQ(scaler.CurrentScale(), 1024.0);
  }
  EXPECT_FALSE(scaler.UnscaleAndCheck({at::ones({2})}));
  scaler.Update();
  EXPECT_DOUBLE_EQ(scaler.CurrentScale(), 2048.0);  // third clean step in a row
  // An overflow resets the count of clean steps.
  at::Tensor bad = at::full({1}, std::numeric_limits<float>::infinity());
  EXPECT_TRUE(scaler.UnscaleAndCheck({bad}));
  scaler.Update();
  EXPECT_DOUBLE_EQ(scaler.CurrentScale(), 1024.0);
  for (int i = 0; i < 2; ++i) {
    scaler.UnscaleAndCheck({at::ones({2})});
    scaler.Update();
  }
  EXPECT_DOUBLE_EQ(scaler.CurrentScale(), 1024.0);
}

TEST(Fp16PluginTest, IsRefusedOnTheCpuWithTheAlternativeNamed) {
  try {
    testing_support::TinyRun(1, {"strategies.precision.plugin=\"fp16\""});
    FAIL() << "fp16 on the CPU device was accepted";
  } catch (const config::ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("[strategies.precision] plugin = \"fp16\" cannot run on the CPU"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("bf16-autocast"), std::string::npos) << message;
  }
}

TEST(Fp16PluginTest, ParametersAreChecked) {
  EXPECT_THROW(testing_support::TinyRun(1, {"strategies.precision.plugin=\"fp16\"",
                                            "strategies.precision.backoff_factor=1.5"}),
               config::ConfigError);
}

}  // namespace
}  // namespace memsweep::plugins
