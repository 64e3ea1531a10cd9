// The caching allocator's settings as LibTorch's CUDA caching allocator reads them
// (PYTORCH_ALLOC_CONF): what each plugin setting produces.
#include "allocator/caching/caching_options.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace memsweep::plugins
