#include "core/memory/byte_size.h"

#include <gtest/gtest.h>

namespace memsweep::memory {
namespace {

TEST(ByteSizeTest, ParsesBinaryDecimalAndPlainSizes) {
  EXPECT_EQ(ParseBytes("2GiB"), 2LL << 30);
  EXPECT_EQ(ParseBytes("512 MiB"), 512LL << 20);
  EXPECT_EQ(ParseBytes("1.5gib"), 3LL << 29);
  EXPECT_EQ(ParseBytes("1GB"), 1000000000LL);
  EXPECT_EQ(ParseBytes("4096"), 4096);
  EXPECT_EQ(ParseBytes("10 B"), 10);
}

TEST(ByteSizeTest, RejectsNonsense) {
  EXPECT_FALSE(ParseBytes("").has_value());
  EXPECT_FALSE(ParseBytes("lots").has_value());
  EXPECT_FALSE(ParseBytes("-1GiB").has_value());
  EXPECT_FALSE(ParseBytes("3 parsecs").has_value());
}

TEST(ByteSizeTest, FormatsWithBinaryUnits) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1024), "1.00 KiB");
  EXPECT_EQ(FormatBytes(4198498058LL), "3.91 GiB");
}

}  // namespace
}  // namespace memsweep::memory
