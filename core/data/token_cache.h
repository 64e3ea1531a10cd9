// Token cache: the ids a real tokenizer ([data] tokenizer) gives a text corpus, kept on disk so
// that a corpus is tokenized once per machine instead of once per cell; and the tokenizer's id
// count, so that a new process need not load the tokenizer to check it (and a token file's
// largest id, for the same check). Files live under
// ${XDG_CACHE_HOME:-~/.cache}/memsweep/tokens/ (env/cache_dir.h), one per corpus and tokenizer.
//
// A file is used only when its key — everything the ids depend on — matches: the data file and
// the tokenizer file (path, size, modification time), the tokenizer_config.json beside it (BOS
// and EOS), [data] format, text_field and train_on, memsweep's version and the cache's format.
// Anything else (a different key, a short or inconsistent file) is ignored and the corpus is
// tokenized again; a file that cannot be written is not an error. MEMSWEEP_TOKEN_CACHE=off turns
// the cache off. memsweep's byte tokenizer (~2 GB/s) is never cached.
//
//   const std::string key = TokenCacheKey(config);       // "" when not cached
//   std::optional<EncodedDocuments> docs = ReadTokenCache(key);
//   if (!docs) { docs = Encode(...); WriteTokenCache(key, *docs); }
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "memsweep/data_config.h"

namespace memsweep::data {

// Every document's ids (as LoadTokenSequences trains them: BOS/EOS added, a prompt's ids marked
// input-only under train_on = "completion"), one document after another.
struct EncodedDocuments {
  std::vector<int32_t> ids;
  std::vector<int64_t> ends;  // document d is ids[ends[d - 1], ends[d]) (ends[-1] = 0)
};

// The key of `config`'s tokenizer alone (its file and tokenizer_config.json, memsweep's
// version), or "" when it is not cached.
std::string TokenizerCacheKey(const DataConfig& config);
// The key of `config`'s corpus, or "" when it is not cached (byte tokenizer, token files, the
// cache turned off, no cache folder, or a file that cannot be examined).
std::string TokenCacheKey(const DataConfig& config);
// The file that holds `key`'s ids (whether or not it exists yet); empty for an empty key.
std::filesystem::path TokenCacheFile(const std::string& key);

std::optional<EncodedDocuments> ReadTokenCache(const std::string& key);
// Returns whether the file was written.
bool WriteTokenCache(const std::string& key, const EncodedDocuments& documents);

// A tokenizer's id count (DocumentEncoder::VocabSize) under its TokenizerCacheKey: a cell
// started as a new process checks [model] vocab_size without loading the tokenizer (Qwen's
// tokenizer.json takes ~0.4 s to read). Only a tokenizer that loaded is recorded.
std::optional<int64_t> ReadVocabCache(const std::string& key);
bool WriteVocabCache(const std::string& key, int64_t ids);

// The key of a [data] format = "tokens" file (its path, size, modification time and token_dtype,
// memsweep's version), or "" when it is not cached. Under it, ReadVocabCache/WriteVocabCache keep
// the ids the file needs (its largest id + 1): validating a cell in a new process checks
// [model] vocab_size without reading the file again.
std::string TokenFileCacheKey(const DataConfig& config);

}  // namespace memsweep::data
