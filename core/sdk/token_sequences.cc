#include "memsweep/token_sequences.h"

#include <algorithm>
#include <string>

#include "core/data/byte_tokenizer.h"
#include "core/data/document_encoder.h"
#include "core/data/document_source.h"
#include "core/data/token_cache.h"
#include "core/data/token_file.h"

namespace memsweep::data {
namespace {

void Append(TokenSequences& sequences, const int32_t* begin, int64_t count) {
  sequences.tokens.insert(sequences.tokens.end(), begin, begin + count);
  sequences.starts.push_back(static_cast<int64_t>(sequences.tokens.size()));
}

// Adds one document (or token stream) as one or more sequences, following `long_documents`.
void AddDocument(TokenSequences& sequences, const int32_t* ids, int64_t n, int64_t seq_len,
                 LongDocuments long_documents) {
  const int64_t max_tokens = seq_len + 1;
  switch (long_documents) {
    case LongDocuments::kKeep:
      Append(sequences, ids, n);
      return;
    case LongDocuments::kTruncate:
      Append(sequences, ids, std::min(n, max_tokens));
      return;
    case LongDocuments::kSplit:
      // Pieces start every seq_len tokens; a piece needs two tokens to train one position.
      for (int64_t start = 0; start + 1 < n; start += seq_len) {
        Append(sequences, ids + start, std::min(max_tokens, n - start));
      }
      return;
  }
}

// Calls `add(ids, count)` for every document's ids, in order: from the token cache when it holds
// this corpus, else encoded — and then written to the cache when the corpus is cached (its ids
// are kept for that; an uncached corpus streams, one document at a time).
template <typename Add>
void ForEachEncodedDocument(const DataConfig& config, const Add& add) {
  const std::string key = TokenCacheKey(config);
  if (std::optional<EncodedDocuments> cached = ReadTokenCache(key)) {
    int64_t begin = 0;
    for (const int64_t end : cached->ends) {
      add(cached->ids.data() + begin, end - begin);
      begin = end;
    }
    return;
  }
  const DocumentEncoder encoder(config);
  EncodedDocuments documents;
  for (const TextDocument& document : LoadDocuments(config)) {
    size_t prompt_tokens = 0;
    std::vector<int32_t> ids = encoder.Encode(document.prompt, document.text, &prompt_tokens);
    if (config.train_on == TrainOn::kCompletion) {
      // BOS and the prompt's tokens are input only: the first target is the completion's
      // first token, predicted from the prompt's last.
      for (size_t i = 0; i < prompt_tokens && i < ids.size(); ++i) ids[i] = InputOnly(ids[i]);
    }
    add(ids.data(), static_cast<int64_t>(ids.size()));
    if (!key.empty()) {
      documents.ids.insert(documents.ids.end(), ids.begin(), ids.end());
      documents.ends.push_back(static_cast<int64_t>(documents.ids.size()));
    }
  }
  if (!key.empty()) WriteTokenCache(key, documents);
}

}  // namespace

TokenSequences LoadTokenSequences(const DataConfig& config, LongDocuments long_documents) {
  if (config.seq_len < 1) {
    throw DataError("[strategies.batching] seq_len = " + std::to_string(config.seq_len) +
                    ": must be at least 1");
  }
  const int64_t max_tokens = config.seq_len + 1;
  TokenSequences sequences;
  sequences.starts.push_back(0);
  if (config.format != DataFormat::kTokens) {
    ForEachEncodedDocument(config, [&](const int32_t* ids, int64_t count) {
      AddDocument(sequences, ids, count, config.seq_len, long_documents);
    });
    sequences.tokens.shrink_to_fit();
    return sequences;
  }

  std::vector<int32_t> tokens = LoadTokenFile(config.path, config.token_dtype);
  const auto count = static_cast<int64_t>(tokens.size());
  if (long_documents == LongDocuments::kKeep) {
    if (count < 2) {
      throw DataError(config.path + ": " + std::to_string(count) +
                      " tokens: a token stream needs at least 2 (one input and its target)");
    }
    sequences.tokens = std::move(tokens);
    sequences.starts.push_back(count);
    return sequences;
  }
  const int64_t windows = count / max_tokens;
  if (windows == 0) {
    throw DataError(config.path + ": " + std::to_string(count) +
                    " tokens, fewer than one sequence of seq_len + 1 = " +
                    std::to_string(max_tokens) +
                    " tokens: use a larger token file or a smaller [strategies.batching] "
                    "seq_len");
  }
  tokens.resize(static_cast<size_t>(windows * max_tokens));
  sequences.tokens = std::move(tokens);
  for (int64_t w = 1; w <= windows; ++w) sequences.starts.push_back(w * max_tokens);
  return sequences;
}

}  // namespace memsweep::data
