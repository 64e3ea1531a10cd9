#include "core/data/document_source.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

namespace memsweep::data {
namespace {

using DocumentVisitor = std::function<void(TextDocument&&)>;

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

// A "prompt"/"completion" pair of a line, if it has both as strings.
bool ReadPromptCompletion(const nlohmann::json& object, TextDocument& document) {
  const auto prompt = object.find("prompt");
  const auto completion = object.find("completion");
  if (prompt == object.end() || completion == object.end() || !prompt->is_string() ||
      !completion->is_string()) {
    return false;
  }
  document.prompt = prompt->get<std::string>();
  document.text = completion->get<std::string>();
  return true;
}

// Calls `visit(document)` for every document of a JSONL file, in order.
void ForEachJsonlDocument(const DataConfig& config, const DocumentVisitor& visit) {
  std::ifstream in = OpenDataFile(config.path);
  const bool completion_only = config.train_on == TrainOn::kCompletion;
  const std::string expected =
      completion_only
          ? std::string("with [data] train_on = \"completion\" each line must be one JSON object "
                        "with string fields \"prompt\" and \"completion\"")
          : "each line must be one JSON object with a string field \"" + config.text_field +
                "\" (or string fields \"prompt\" and \"completion\")";
  std::string line;
  for (int64_t line_number = 1; ReadLine(in, line_number, line); ++line_number) {
    if (IsBlank(line)) continue;
    nlohmann::json object;
    try {
      object = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& error) {
      throw DataError(Location(config.path, line_number) + ": invalid JSON (" +
                      DescribeParseError(error) + "): " + expected);
    } catch (const nlohmann::json::out_of_range& error) {
      // A number too large for any JSON number type (found by tools/fuzz).
      throw DataError(Location(config.path, line_number) + ": invalid JSON (a number out of " +
                      "range): " + expected);
    }
    if (!object.is_object()) {
      throw DataError(Location(config.path, line_number) + ": expected a JSON object, found " +
                      object.type_name() + ": " + expected);
    }
    TextDocument document;
    if (ReadPromptCompletion(object, document)) {
      visit(std::move(document));
      continue;
    }
    if (completion_only) {
      throw DataError(Location(config.path, line_number) +
                      ": no string fields \"prompt\" and \"completion\": " + expected +
                      " (or set train_on = \"all\" to train on every token)");
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
    document.text = field->get<std::string>();
    visit(std::move(document));
  }
  if (in.bad()) throw DataError(config.path + ": read error: check the file is readable");
}

// Calls `visit(document)` for every document of a plain-text file, in order.
void ForEachPlainTextDocument(const DataConfig& config, const DocumentVisitor& visit) {
  std::ifstream in = OpenDataFile(config.path);
  std::string document;
  bool in_document = false;
  std::string line;
  for (int64_t line_number = 1; ReadLine(in, line_number, line); ++line_number) {
    if (IsBlank(line)) {
      if (in_document) visit({std::string(), std::move(document)});
      document.clear();
      in_document = false;
      continue;
    }
    if (in_document) document.push_back('\n');
    document += line;
    in_document = true;
  }
  if (in_document) visit({std::string(), std::move(document)});
  if (in.bad()) throw DataError(config.path + ": read error: check the file is readable");
}

// Calls `visit(document)` for every document of `config.path`; throws DataError as LoadDocuments
// does, a file without documents included.
void ForEachDocument(const DataConfig& config, const DocumentVisitor& visit) {
  int64_t count = 0;
  const DocumentVisitor counted = [&](TextDocument&& document) {
    ++count;
    visit(std::move(document));
  };
  switch (config.format) {
    case DataFormat::kJsonl:
      ForEachJsonlDocument(config, counted);
      break;
    case DataFormat::kText:
      if (config.train_on == TrainOn::kCompletion) {
        throw DataError(config.path + ": [data] train_on = \"completion\" needs JSONL "
                        "prompt/completion lines (format = \"jsonl\"); plain text has no "
                        "completion to train on");
      }
      ForEachPlainTextDocument(config, counted);
      break;
    case DataFormat::kTokens:
      throw DataError(config.path +
                      ": format \"tokens\" holds token ids, not text: load it with "
                      "LoadTokenFile, or set [data] format to \"jsonl\" or \"text\"");
  }
  if (count == 0) {
    throw DataError(config.path + ": no documents found: check [data] path and [data] format");
  }
}

}  // namespace

std::vector<TextDocument> LoadDocuments(const DataConfig& config) {
  std::vector<TextDocument> documents;
  ForEachDocument(config,
                  [&](TextDocument&& document) { documents.push_back(std::move(document)); });
  return documents;
}

int64_t CheckDocuments(const DataConfig& config) {
  int64_t count = 0;
  ForEachDocument(config, [&](TextDocument&&) { ++count; });
  return count;
}

std::vector<std::string> LoadTextDocuments(const DataConfig& config) {
  std::vector<std::string> texts;
  for (TextDocument& document : LoadDocuments(config)) {
    texts.push_back(document.prompt + document.text);
  }
  return texts;
}

}  // namespace memsweep::data
