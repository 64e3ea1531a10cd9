#include "core/data/token_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace memsweep::data {
namespace {

std::string TempPath(const std::string& suffix) {
  const testing::TestInfo* test = testing::UnitTest::GetInstance()->current_test_info();
  return testing::TempDir() + "memsweep_" + test->test_suite_name() + "_" + test->name() + suffix;
}

TEST(TokenFileTest, Uint16RoundTripIsTwoLittleEndianBytesPerToken) {
  const std::string path = TempPath(".bin");
  const std::vector<int32_t> tokens = {0, 1, 258, 50256, 65535};
  WriteTokenFile(path, tokens, TokenDtype::kUint16);
  EXPECT_EQ(std::filesystem::file_size(path), 10u);
  EXPECT_EQ(LoadTokenFile(path, TokenDtype::kUint16), tokens);

  std::ifstream in(path, std::ios::binary);
  unsigned char bytes[6] = {};
  in.read(reinterpret_cast<char*>(bytes), 6);
  EXPECT_EQ(bytes[4], 0x02);  // 258 = 0x0102, low byte first
  EXPECT_EQ(bytes[5], 0x01);
}

TEST(TokenFileTest, Uint32RoundTripKeepsLargeIds) {
  const std::string path = TempPath(".bin");
  const std::vector<int32_t> tokens = {0, 65536, 128255, 2147483647};
  WriteTokenFile(path, tokens, TokenDtype::kUint32);
  EXPECT_EQ(std::filesystem::file_size(path), 16u);
  EXPECT_EQ(LoadTokenFile(path, TokenDtype::kUint32), tokens);
}

TEST(TokenFileTest, EmptyFileHasNoTokens) {
  const std::string path = TempPath(".bin");
  WriteTokenFile(path, {}, TokenDtype::kUint16);
  EXPECT_TRUE(LoadTokenFile(path, TokenDtype::kUint16).empty());
}

TEST(TokenFileTest, SizeNotMultipleOfElementSizeErrorNamesFile) {
  const std::string path = TempPath(".bin");
  std::ofstream(path, std::ios::binary) << "abcdef";  // 6 bytes: 3 uint16, but not uint32
  EXPECT_EQ(LoadTokenFile(path, TokenDtype::kUint16).size(), 3u);
  try {
    LoadTokenFile(path, TokenDtype::kUint32);
    FAIL() << "expected a DataError";
  } catch (const DataError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind(path + ": size 6 bytes is not a multiple of 4", 0), 0u) << message;
    EXPECT_NE(message.find("token_dtype"), std::string::npos) << message;
  }
}

TEST(TokenFileTest, MissingFileIsDataError) {
  EXPECT_THROW(LoadTokenFile(TempPath(".bin"), TokenDtype::kUint16), DataError);
}

TEST(TokenFileTest, WriteRejectsIdsThatDoNotFitTheDtype) {
  EXPECT_THROW(WriteTokenFile(TempPath(".bin"), {65536}, TokenDtype::kUint16), DataError);
  EXPECT_THROW(WriteTokenFile(TempPath(".bin"), {-1}, TokenDtype::kUint32), DataError);
}

}  // namespace
}  // namespace memsweep::data
