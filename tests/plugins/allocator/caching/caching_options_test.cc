// The caching allocator's settings as LibTorch's CUDA caching allocator reads them
// (PYTORCH_ALLOC_CONF): what each plugin setting produces.
#include "allocator/caching/caching_options.h"

#include <c10/core/AllocatorConfig.h>
#include <gtest/gtest.h>

#include "support/run_configs.h"

namespace memsweep::plugins {
namespace {

TEST(CachingOptionsConfTest, DefaultsGiveAnEmptyString) {
  EXPECT_EQ(CachingOptions::FromParams(-1, 0, 0.0, false).AllocatorConf(), "");
}

TEST(CachingOptionsConfTest, EachSettingProducesItsKey) {
  EXPECT_EQ(CachingOptions::FromParams(128, 0, 0.0, false).AllocatorConf(),
            "max_split_size_mb:128");
  EXPECT_EQ(CachingOptions::FromParams(-1, 4, 0.0, false).AllocatorConf(),
            "roundup_power2_divisions:4");
  EXPECT_EQ(CachingOptions::FromParams(-1, 0, 0.6, false).AllocatorConf(),
            "garbage_collection_threshold:0.6");
  EXPECT_EQ(CachingOptions::FromParams(-1, 0, 0.0, true).AllocatorConf(),
            "expandable_segments:True");
}

TEST(CachingOptionsConfTest, SettingsCombineInOneString) {
  EXPECT_EQ(CachingOptions::FromParams(512, 8, 0.75, true).AllocatorConf(),
            "max_split_size_mb:512,roundup_power2_divisions:8,"
            "garbage_collection_threshold:0.75,expandable_segments:True");
}

// LibTorch's own parser (the one the CUDA caching allocator reads, and what the worker calls
// before CUDA initialises) accepts the string and takes every value from it. The parser is
// device-independent, so this holds on a machine without a GPU.
TEST(CachingOptionsConfTest, LibTorchsAllocatorConfigTakesTheString) {
  using c10::CachingAllocator::AcceleratorAllocatorConfig;
  const CachingOptions options = CachingOptions::FromParams(512, 8, 0.75, true);
  c10::CachingAllocator::setAllocatorSettings(options.AllocatorConf());
  EXPECT_EQ(AcceleratorAllocatorConfig::max_split_size(), size_t{512} << 20);
  EXPECT_DOUBLE_EQ(AcceleratorAllocatorConfig::garbage_collection_threshold(), 0.75);
  EXPECT_TRUE(AcceleratorAllocatorConfig::use_expandable_segments());
  EXPECT_EQ(AcceleratorAllocatorConfig::roundup_power2_divisions(size_t{1} << 20), 8u);
  EXPECT_EQ(c10::CachingAllocator::getAllocatorSettings(), options.AllocatorConf());
}

TEST(CachingOptionsConfTest, ThePluginHandsTheStringToTheCudaAllocator) {
  const auto strategies = config::InstantiateStrategies(testing_support::TinyRun(
      1, {"strategies.allocator.plugin=\"caching\"", "strategies.allocator.max_split_size_mb=64",
          "strategies.allocator.expandable_segments=true"}));
  auto* allocator = dynamic_cast<AllocatorStrategy*>(strategies.front().impl.get());
  ASSERT_NE(allocator, nullptr);
  EXPECT_EQ(allocator->DeviceAllocatorSettings(), "max_split_size_mb:64,expandable_segments:True");
  const auto defaults = config::InstantiateStrategies(testing_support::TinyRun(1));
  EXPECT_EQ(dynamic_cast<AllocatorStrategy*>(defaults.front().impl.get())->DeviceAllocatorSettings(),
            "");
}

}  // namespace
}  // namespace memsweep::plugins
