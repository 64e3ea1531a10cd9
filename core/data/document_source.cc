#include "core/data/document_source.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

namespace memsweep::data {
namespace {

constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

// Opens `path` for reading, or throws a DataError that tells the user to fix [data] path.
std::ifstream OpenDataFile(const std::string& path) {
  if (path.empty()) throw DataError("[data] path is empty: set [data] path to the training data");
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    throw DataError(path + ": missing file: check [data] path");
  }
  if (std::filesystem::is_directory(path, error)) {
    throw DataError(path + ": is a directory, not a file: check [data] path");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open file for reading: check its permissions");
  return in;
}

// Reads the next line without its '\n' or trailing '\r'; drops a UTF-8 byte-order mark from the
// first line. Returns false at end of file.
bool ReadLine(std::istream& in, int64_t line_number, std::string& line) {
  if (!std::getline(in, line)) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line_number == 1 &&
      std::string_view(line).substr(0, kUtf8ByteOrderMark.size()) == kUtf8ByteOrderMark) {
    line.erase(0, kUtf8ByteOrderMark.size());
  }
  return true;
}

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r\f\v") == std::string_view::npos;
}

// nlohmann's message without its exception id and its "line 1" (each line is parsed alone):
// "[json.exception.parse_error.101] parse error at line 1, column 9: ..." -> "column 9: ...".
std::string DescribeParseError(const nlohmann::json::parse_error& error) {
  std::string message = error.what();
  const size_t id_end = message.find("] ");
  if (message.rfind("[json.exception.", 0) == 0 && id_end != std::string::npos) {
    message.erase(0, id_end + 2);
  }
  constexpr std::string_view kLinePrefix = "parse error at line 1, ";
  if (message.rfind(kLinePrefix, 0) == 0) message.erase(0, kLinePrefix.size());
  return message;
}

std::string Location(const std::string& path, int64_t line_number) {
  return path + ":" + std::to_string(line_number);
}

std::vector<std::string> LoadJsonlDocuments(const DataConfig& config) {
  std::ifstream in = OpenDataFile(config.path);
  const std::string expected =
      "each line must be one JSON object with a string field \"" + config.text_field + "\"";
  std::vector<std::string> documents;
  std::string line;
  for (int64_t line_number = 1; ReadLine(in, line_number, line); ++line_number) {
    if (IsBlank(line)) continue;
    nlohmann::json object;
    try {
      object = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& error) {
      throw DataError(Location(config.path, line_number) + ": invalid JSON (" +
                      DescribeParseError(error) + "): " + expected);
    }
    if (!object.is_object()) {
      throw DataError(Location(config.path, line_number) + ": expected a JSON object, found " +
                      object.type_name() + ": " + expected);
    }
    const auto field = object.find(config.text_field);
    if (field == object.end()) {
      throw DataError(Location(config.path, line_number) + ": missing field \"" +
                      config.text_field + "\": " + expected +
                      " (or set [data] text_field to the field that holds the text)");
    }
    if (!field->is_string()) {
      throw DataError(Location(config.path, line_number) + ": field \"" + config.text_field +
                      "\" is " + field->type_name() + ", not a string: " + expected);
    }
    documents.push_back(field->get<std::string>());
  }
  if (in.bad()) throw DataError(config.path + ": read error: check the file is readable");
  return documents;
}

std::vector<std::string> LoadPlainTextDocuments(const DataConfig& config) {
  std::ifstream in = OpenDataFile(config.path);
  std::vector<std::string> documents;
  std::string document;
  bool in_document = false;
  std::string line;
  for (int64_t line_number = 1; ReadLine(in, line_number, line); ++line_number) {
    if (IsBlank(line)) {
      if (in_document) documents.push_back(std::move(document));
      document.clear();
      in_document = false;
      continue;
    }
    if (in_document) document.push_back('\n');
    document += line;
    in_document = true;
  }
  if (in_document) documents.push_back(std::move(document));
  if (in.bad()) throw DataError(config.path + ": read error: check the file is readable");
  return documents;
}

}  // namespace

std::vector<std::string> LoadTextDocuments(const DataConfig& config) {
  std::vector<std::string> documents;
  switch (config.format) {
    case DataFormat::kJsonl:
      documents = LoadJsonlDocuments(config);
      break;
    case DataFormat::kText:
      documents = LoadPlainTextDocuments(config);
      break;
    case DataFormat::kTokens:
      throw DataError(config.path +
                      ": format \"tokens\" holds token ids, not text: load it with "
                      "LoadTokenFile, or set [data] format to \"jsonl\" or \"text\"");
  }
  if (documents.empty()) {
    throw DataError(config.path + ": no documents found: check [data] path and [data] format");
  }
  return documents;
}

}  // namespace memsweep::data
