#include "core/data/document_encoder.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>

#include "core/data/byte_tokenizer.h"

namespace memsweep::data {
namespace {

// A special token of tokenizer_config.json: a string, {"content": ...}, or absent/null.
std::string SpecialToken(const nlohmann::json& config, const char* key) {
  if (!config.contains(key) || config.at(key).is_null()) return "";
  const nlohmann::json& value = config.at(key);
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content")) return value.at("content").get<std::string>();
  return "";
}

// The tokenizer of `file`, loaded once per process while the file stays the same.
std::shared_ptr<const TextTokenizer> CachedTokenizer(const std::string& file) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const TextTokenizer>> loaded;
  std::error_code error;
  const auto size = std::filesystem::file_size(file, error);
  const auto modified = std::filesystem::last_write_time(file, error);
  const std::string key = file + '\n' + std::to_string(size) + '\n' +
                          std::to_string(modified.time_since_epoch().count());
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = loaded.find(key);
  if (found == loaded.end() || error) {
    std::shared_ptr<const TextTokenizer> tokenizer = LoadTextTokenizer(file);  // throws if bad
    if (error) return tokenizer;
    found = loaded.insert_or_assign(key, std::move(tokenizer)).first;
  }
  return found->second;
}

}  // namespace

DocumentEncoder::DocumentEncoder(const DataConfig& config) {
  if (config.tokenizer.empty()) return;
  const std::string file = TokenizerFile(config.tokenizer);
  tokenizer_ = CachedTokenizer(file);
  const auto config_file = std::filesystem::path(file).parent_path() / "tokenizer_config.json";
  if (!std::filesystem::exists(config_file)) {
    bos_ = tokenizer_->OwnBos();
    eos_ = tokenizer_->OwnEos();
    return;
  }
  nlohmann::json tokenizer_config;
  try {
    std::ifstream in(config_file);
    tokenizer_config = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw TokenizerError(config_file.string() + ": not valid JSON (" + e.what() + ")");
  }
  const auto id_of = [&](const char* key) {
    const std::string token = SpecialToken(tokenizer_config, key);
    if (token.empty()) return -1;
    const int32_t id = tokenizer_->TokenId(token);
    if (id < 0) {
      throw TokenizerError(config_file.string() + ": " + key + " \"" + token +
                           "\" is not a token of " + file);
    }
    return id;
  };
  if (tokenizer_config.value("add_bos_token", true)) bos_ = id_of("bos_token");
  eos_ = id_of("eos_token");
}

std::vector<int32_t> DocumentEncoder::Encode(const std::string& prompt, const std::string& text,
                                             size_t* prompt_tokens) const {
  if (tokenizer_ == nullptr) {
    std::vector<int32_t> ids = data::Encode(prompt + text);
    if (prompt_tokens != nullptr) *prompt_tokens = 1 + prompt.size();  // BOS + the prompt's bytes
    return ids;
  }
  std::vector<int32_t> ids;
  if (bos_ >= 0) ids.push_back(bos_);
  const std::vector<int32_t> head = tokenizer_->Encode(prompt);
  ids.insert(ids.end(), head.begin(), head.end());
  if (prompt_tokens != nullptr) *prompt_tokens = ids.size();
  const std::vector<int32_t> body = tokenizer_->Encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  if (eos_ >= 0) ids.push_back(eos_);
  return ids;
}

int64_t DocumentEncoder::VocabSize() const {
  return tokenizer_ == nullptr ? kByteVocabSize
                               : std::max<int64_t>(tokenizer_->VocabSize(), kPadId + 1);
}

}  // namespace memsweep::data
