#include "core/data/token_cache.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <istream>
#include <iterator>
#include <system_error>

#include "core/data/text_tokenizer.h"
#include "core/env/cache_dir.h"

namespace memsweep::data {
namespace {

// Bump when what a key's ids are changes without the key showing it.
constexpr const char* kMagic = "memsweep-token-cache 1\n";

// Path, size and modification time of `file`, or "" if it cannot be examined.
std::string FileIdentity(const std::filesystem::path& file) {
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(file, error);
  if (error) return "";
  const auto size = std::filesystem::file_size(absolute, error);
  if (error) return "";
  const auto modified = std::filesystem::last_write_time(absolute, error);
  if (error) return "";
  return absolute.lexically_normal().string() + " " + std::to_string(size) + " " +
         std::to_string(modified.time_since_epoch().count());
}

// FNV-1a, 64 bits: a stable file name for a key (the file repeats the key, so a collision
// only costs a re-tokenization).
std::string KeyHash(const std::string& key) {
  uint64_t hash = 14695981039346656037ull;
  for (const char c : key) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 1099511628211ull;
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

template <typename T>
void AppendRaw(std::string& out, const T* data, size_t count) {
  out.append(reinterpret_cast<const char*>(data), count * sizeof(T));
}

template <typename T>
bool ReadRaw(std::istream& in, T* data, size_t count) {
  return static_cast<bool>(
      in.read(reinterpret_cast<char*>(data), static_cast<std::streamsize>(count * sizeof(T))));
}

std::filesystem::path VocabCacheFile(const std::string& key) {
  return env::CacheDir("tokens") / (KeyHash(key) + ".vocab");
}

}  // namespace

std::string TokenizerCacheKey(const DataConfig& config) {
  if (config.tokenizer.empty()) return "";
  const char* setting = std::getenv("MEMSWEEP_TOKEN_CACHE");
  if (setting != nullptr && std::strcmp(setting, "off") == 0) return "";
  if (env::CacheDir("tokens").empty()) return "";
  std::string tokenizer_file;
  try {
    tokenizer_file = TokenizerFile(config.tokenizer);
  } catch (const std::exception&) {
    return "";  // the tokenizer's own loading reports what is wrong
  }
  const std::string tokenizer = FileIdentity(tokenizer_file);
  if (tokenizer.empty()) return "";
  const std::filesystem::path beside =
      std::filesystem::path(tokenizer_file).parent_path() / "tokenizer_config.json";
  const std::string tokenizer_config =
      std::filesystem::exists(beside) ? FileIdentity(beside) : std::string("none");
  if (tokenizer_config.empty()) return "";
  return std::string("memsweep ") + MEMSWEEP_VERSION + "\ntokenizer " + tokenizer +
         "\ntokenizer_config " + tokenizer_config + "\n";
}

std::string TokenCacheKey(const DataConfig& config) {
  if (config.format == DataFormat::kTokens) return "";
  const std::string tokenizer = TokenizerCacheKey(config);
  const std::string data = FileIdentity(config.path);
  if (tokenizer.empty() || data.empty()) return "";
  return tokenizer + "data " + data + "\nformat " +
         std::to_string(static_cast<int>(config.format)) + "\ntext_field " + config.text_field +
         "\ntrain_on " + std::to_string(static_cast<int>(config.train_on)) + "\n";
}

std::string TokenFileCacheKey(const DataConfig& config) {
  if (config.format != DataFormat::kTokens) return "";
  const char* setting = std::getenv("MEMSWEEP_TOKEN_CACHE");
  if (setting != nullptr && std::strcmp(setting, "off") == 0) return "";
  if (env::CacheDir("tokens").empty()) return "";
  const std::string file = FileIdentity(config.path);
  if (file.empty()) return "";
  return std::string("memsweep ") + MEMSWEEP_VERSION + "\ntoken file " + file + "\ntoken_dtype " +
         std::to_string(static_cast<int>(config.token_dtype)) + "\n";
}

std::filesystem::path TokenCacheFile(const std::string& key) {
  if (key.empty()) return {};
  return env::CacheDir("tokens") / (KeyHash(key) + ".tokens");
}

std::optional<int64_t> ReadVocabCache(const std::string& key) {
  if (key.empty()) return std::nullopt;
  std::ifstream in(VocabCacheFile(key), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string head = kMagic + key;
  if (bytes.compare(0, head.size(), head) != 0) return std::nullopt;
  try {
    size_t used = 0;
    const int64_t ids = std::stoll(bytes.substr(head.size()), &used);
    if (ids > 0 && head.size() + used + 1 == bytes.size() && bytes.back() == '\n') return ids;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

bool WriteVocabCache(const std::string& key, int64_t ids) {
  if (key.empty()) return false;
  return env::WriteCacheFile(VocabCacheFile(key), kMagic + key + std::to_string(ids) + "\n");
}

// File: kMagic, the key's length (uint64) and the key, the document count and id count
// (uint64 each), the document ends (int64 each), the ids (int32 each); native byte order.
std::optional<EncodedDocuments> ReadTokenCache(const std::string& key) {
  if (key.empty()) return std::nullopt;
  const std::filesystem::path file = TokenCacheFile(key);
  std::error_code error;
  const uint64_t size = std::filesystem::file_size(file, error);
  if (error) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  const std::string head = kMagic;
  std::string text(head.size(), '\0');
  uint64_t key_size = 0, documents = 0, ids = 0;
  if (!ReadRaw(in, text.data(), text.size()) || text != head ||
      !ReadRaw(in, &key_size, 1) || key_size != key.size()) {
    return std::nullopt;
  }
  text.resize(key.size());
  if (!ReadRaw(in, text.data(), text.size()) || text != key || !ReadRaw(in, &documents, 1) ||
      !ReadRaw(in, &ids, 1)) {
    return std::nullopt;
  }
  // The arrays must fill the rest of the file exactly (checked before anything is allocated).
  const uint64_t header = head.size() + 3 * sizeof(uint64_t) + key.size();
  if (documents > size || ids > size ||
      size - header != documents * sizeof(int64_t) + ids * sizeof(int32_t)) {
    return std::nullopt;
  }
  EncodedDocuments out;
  out.ends.resize(documents);
  out.ids.resize(ids);
  if (!ReadRaw(in, out.ends.data(), documents) || !ReadRaw(in, out.ids.data(), ids)) {
    return std::nullopt;
  }
  int64_t previous = 0;
  for (const int64_t end : out.ends) {
    if (end < previous) return std::nullopt;
    previous = end;
  }
  if (previous != static_cast<int64_t>(ids)) return std::nullopt;
  return out;
}

bool WriteTokenCache(const std::string& key, const EncodedDocuments& documents) {
  if (key.empty()) return false;
  std::string bytes = kMagic;
  const uint64_t key_size = key.size(), count = documents.ends.size(), ids = documents.ids.size();
  AppendRaw(bytes, &key_size, 1);
  bytes += key;
  AppendRaw(bytes, &count, 1);
  AppendRaw(bytes, &ids, 1);
  AppendRaw(bytes, documents.ends.data(), documents.ends.size());
  AppendRaw(bytes, documents.ids.data(), documents.ids.size());
  return env::WriteCacheFile(TokenCacheFile(key), bytes);
}

}  // namespace memsweep::data
