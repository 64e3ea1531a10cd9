#include "core/data/byte_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace memsweep::data {
namespace {

TEST(ByteTokenizerTest, EncodeWrapsBytesInBosAndEos) {
  EXPECT_EQ(Encode("hi"), (std::vector<int32_t>{kBosId, 'h', 'i', kEosId}));
  EXPECT_EQ(Encode(""), (std::vector<int32_t>{kBosId, kEosId}));
}

TEST(ByteTokenizerTest, EncodesHighBytesAsUnsignedIds) {
  const std::vector<int32_t> ids = Encode("\xC3\xA9");  // "é" in UTF-8
  EXPECT_EQ(ids, (std::vector<int32_t>{kBosId, 0xC3, 0xA9, kEosId}));
}

TEST(ByteTokenizerTest, DecodeInvertsEncodeForAllByteValues) {
  std::string every_byte;
  for (int byte = 0; byte < 256; ++byte) every_byte.push_back(static_cast<char>(byte));
  const std::string texts[] = {"", "hello, world", "line one\nline two\n", "na\xC3\xAFve",
                               every_byte};
  for (const std::string& text : texts) EXPECT_EQ(Decode(Encode(text)), text);
}

TEST(ByteTokenizerTest, DecodeSkipsSpecialAndOutOfRangeIds) {
  EXPECT_EQ(Decode({kBosId, 'a', kPadId, 'b', kEosId, kPadId, -1, 100000}), "ab");
}

TEST(ByteTokenizerTest, SpecialIdsFollowTheBytesAndFitTheVocab) {
  EXPECT_EQ(kBosId, 256);
  EXPECT_EQ(kEosId, 257);
  EXPECT_EQ(kPadId, 258);
  EXPECT_EQ(kByteVocabSize, 259);
}

}  // namespace
}  // namespace memsweep::data
