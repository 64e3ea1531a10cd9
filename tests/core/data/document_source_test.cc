#include "core/data/document_source.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

namespace memsweep::data {
namespace {

// Writes `contents` to a file in the test temp directory named after the running test.
std::string WriteTempFile(const std::string& suffix, const std::string& contents) {
  const testing::TestInfo* test = testing::UnitTest::GetInstance()->current_test_info();
  const std::string path =
      testing::TempDir() + "memsweep_" + test->test_suite_name() + "_" + test->name() + suffix;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
  return path;
}

DataConfig ConfigFor(const std::string& path, DataFormat format) {
  DataConfig config;
  config.path = path;
  config.format = format;
  return config;
}

// Runs LoadTextDocuments, expecting a DataError; returns its message.
std::string LoadError(const DataConfig& config) {
  try {
    LoadTextDocuments(config);
  } catch (const DataError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a DataError for " << config.path;
  return "";
}

// CheckDocuments reads what LoadDocuments reads, keeping nothing: the same count, the same
// errors.
TEST(DocumentSourceTest, CheckDocumentsCountsWhatLoadDocumentsLoads) {
  const std::string path =
      WriteTempFile(".jsonl", "{\"text\": \"a\"}\n\n{\"prompt\": \"q\", \"completion\": \"b\"}\n");
  EXPECT_EQ(CheckDocuments(ConfigFor(path, DataFormat::kJsonl)), 2);
  EXPECT_EQ(LoadDocuments(ConfigFor(path, DataFormat::kJsonl)).size(), 2u);
}

TEST(DocumentSourceTest, CheckDocumentsThrowsLoadDocumentsErrors) {
  for (const std::string& contents : {std::string("{\"text\": \"a\"}\n{oops\n"), std::string()}) {
    const DataConfig config = ConfigFor(WriteTempFile(".jsonl", contents), DataFormat::kJsonl);
    std::string checked;
    try {
      CheckDocuments(config);
    } catch (const DataError& error) {
      checked = error.what();
    }
    EXPECT_FALSE(checked.empty()) << contents;
    EXPECT_EQ(checked, LoadError(config));
  }
}

// Found by tools/fuzz (data_reader): a number too large for any JSON number type ended the
// command with an internal error instead of naming the line.
TEST(DocumentSourceTest, ANumberOutOfRangeIsInvalidJsonOnItsLine) {
  const std::string path = WriteTempFile(
      ".jsonl", "{\"text\": \"a\"}\n{\"text\": \"b\", \"n\": 4" + std::string(400, '4') + "}\n");
  EXPECT_EQ(LoadError(ConfigFor(path, DataFormat::kJsonl)).rfind(
                path + ":2: invalid JSON (a number out of range): each line must be one JSON "
                       "object",
                0),
            0u);
}

TEST(DocumentSourceTest, LoadsBundledDevilsDictionary) {
  const std::vector<std::string> documents = LoadTextDocuments(
      ConfigFor(std::string(MEMSWEEP_SOURCE_DIR) + "/experiments/data/devils-dictionary.jsonl",
                DataFormat::kJsonl));
  ASSERT_EQ(documents.size(), 997u);
  EXPECT_EQ(documents.front().rfind("ABASEMENT, n.", 0), 0u);
}

TEST(DocumentSourceTest, JsonlReadsTextFieldSkipsBlankLinesAndToleratesCrlf) {
  const std::string path = WriteTempFile(
      ".jsonl",
      "{\"text\": \"first\", \"id\": 1}\r\n\n   \n{\"id\": 2, \"text\": \"sec\\nond\"}\n");
  EXPECT_EQ(LoadTextDocuments(ConfigFor(path, DataFormat::kJsonl)),
            (std::vector<std::string>{"first", "sec\nond"}));
}

TEST(DocumentSourceTest, JsonlUsesConfiguredTextField) {
  const std::string path = WriteTempFile(".jsonl", "{\"body\": \"a\"}\n{\"body\": \"b\"}\n");
  DataConfig config = ConfigFor(path, DataFormat::kJsonl);
  config.text_field = "body";
  EXPECT_EQ(LoadTextDocuments(config), (std::vector<std::string>{"a", "b"}));
}

TEST(DocumentSourceTest, JsonlInvalidJsonErrorNamesFileAndLine) {
  const std::string path =
      WriteTempFile(".jsonl", "{\"text\": \"ok\"}\n\n{\"text\": \"unterminated}\n");
  const std::string message = LoadError(ConfigFor(path, DataFormat::kJsonl));
  EXPECT_NE(message.find(path + ":3: invalid JSON ("), std::string::npos) << message;
  EXPECT_NE(message.find("each line must be one JSON object with a string field \"text\""),
            std::string::npos)
      << message;
}

TEST(DocumentSourceTest, JsonlMissingOrNonStringFieldErrorNamesLine) {
  const std::string missing = WriteTempFile("_missing.jsonl", "{\"text\": \"ok\"}\n{\"t\": 1}\n");
  EXPECT_NE(LoadError(ConfigFor(missing, DataFormat::kJsonl)).find(missing + ":2: missing field"),
            std::string::npos);
  const std::string number = WriteTempFile("_number.jsonl", "{\"text\": 5}\n");
  EXPECT_NE(LoadError(ConfigFor(number, DataFormat::kJsonl)).find(number + ":1: field \"text\""),
            std::string::npos);
  const std::string array = WriteTempFile("_array.jsonl", "[\"text\"]\n");
  EXPECT_NE(LoadError(ConfigFor(array, DataFormat::kJsonl)).find(array + ":1: expected a JSON"),
            std::string::npos);
}

TEST(DocumentSourceTest, MissingFileErrorSaysToCheckPath) {
  const std::string path = testing::TempDir() + "memsweep_does_not_exist.jsonl";
  EXPECT_EQ(LoadError(ConfigFor(path, DataFormat::kJsonl)),
            path + ": missing file: check [data] path");
}

TEST(DocumentSourceTest, FileWithoutDocumentsIsAnError) {
  const std::string path = WriteTempFile(".txt", "\n  \n\n");
  EXPECT_NE(LoadError(ConfigFor(path, DataFormat::kText)).find(path + ": no documents found"),
            std::string::npos);
  EXPECT_NE(LoadError(ConfigFor(path, DataFormat::kJsonl)).find(path + ": no documents found"),
            std::string::npos);
}

TEST(DocumentSourceTest, TextSplitsParagraphsOnBlankLines) {
  const std::string path = WriteTempFile(
      ".txt", "\n\nfirst line\nsecond line\n\nsecond doc\n \t \n\n\nthird\r\ndoc\r\n");
  EXPECT_EQ(LoadTextDocuments(ConfigFor(path, DataFormat::kText)),
            (std::vector<std::string>{"first line\nsecond line", "second doc", "third\ndoc"}));
}

TEST(DocumentSourceTest, TextWithoutTrailingNewlineKeepsLastDocument) {
  const std::string path = WriteTempFile(".txt", "only\ndocument");
  EXPECT_EQ(LoadTextDocuments(ConfigFor(path, DataFormat::kText)),
            (std::vector<std::string>{"only\ndocument"}));
}

TEST(DocumentSourceTest, TokenFormatIsNotText) {
  const std::string path = WriteTempFile(".bin", "\x01\x00");
  EXPECT_THROW(LoadTextDocuments(ConfigFor(path, DataFormat::kTokens)), DataError);
}

}  // namespace
}  // namespace memsweep::data
