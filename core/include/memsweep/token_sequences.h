// TokenSequences: the training data named by a DataConfig as token sequences, ready to be cut
// into rows. The packing slot's batch sources build on it (one sequence per row, several per row,
// length buckets, one stream).
//
//   TokenSequences sequences = LoadTokenSequences(config, LongDocuments::kTruncate);
//   for (int64_t s = 0; s < sequences.Count(); ++s) Use(sequences.Data(s), sequences.Length(s));
//
// kJsonl/kText documents are byte-tokenized (BOS, bytes, EOS); a prompt/completion line is one
// document, prompt then completion, whose prompt tokens are input only under
// train_on = "completion". A sequence of
// L tokens trains L - 1 positions: inputs tokens 0..L-2, targets tokens 1..L-1. What happens to a
// document longer than seq_len + 1 tokens (more positions than a row holds) is the caller's
// choice (LongDocuments). A kTokens file has no documents: it is cut into consecutive windows of
// seq_len + 1 tokens (the incomplete tail is dropped), or kept as one sequence with kKeep.
#pragma once

#include <cstdint>
#include <vector>

#include "memsweep/data_config.h"

namespace memsweep::data {

enum class LongDocuments : uint8_t {
  kTruncate,  // keep the first seq_len + 1 tokens (seq_len positions); the rest is never trained
  kSplit,     // cut into pieces of at most seq_len + 1 tokens; consecutive pieces share one token
              // (the last target of a piece is the first input of the next), so every position
              // of the document is trained exactly once; each piece is a sequence of its own
  kKeep,      // whole documents, however long (for sources that cut rows out of a stream)
};

// A token that is input only — never a target, so no loss is taken on predicting it (a prompt's
// tokens under train_on = "completion") — is stored as -(id + 1). AssembleBatch reads this; a
// source that looks at token values itself uses TokenId.
inline int32_t TokenId(int32_t stored) { return stored < 0 ? -stored - 1 : stored; }
inline bool IsTarget(int32_t stored) { return stored >= 0; }
inline int32_t InputOnly(int32_t id) { return -id - 1; }

struct TokenSequences {
  std::vector<int32_t> tokens;  // all sequences back to back (input-only tokens: InputOnly(id))
  std::vector<int64_t> starts;  // Count() + 1 offsets into tokens

  int64_t Count() const { return static_cast<int64_t>(starts.size()) - 1; }
  int64_t Length(int64_t sequence) const { return starts[sequence + 1] - starts[sequence]; }
  // Positions the sequence trains: Length - 1.
  int64_t Positions(int64_t sequence) const { return Length(sequence) - 1; }
  const int32_t* Data(int64_t sequence) const { return tokens.data() + starts[sequence]; }
  int64_t TotalPositions() const { return static_cast<int64_t>(tokens.size()) - Count(); }
};

// Loads and tokenizes `config.path`. Throws DataError if the data cannot be loaded, seq_len is
// not positive, or a token file holds fewer than seq_len + 1 tokens (kTruncate/kSplit) or fewer
// than 2 tokens (kKeep).
TokenSequences LoadTokenSequences(const DataConfig& config, LongDocuments long_documents);

}  // namespace memsweep::data
