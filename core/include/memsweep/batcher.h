// Batcher: turns the training data named by a DataConfig into an endless, deterministically
// shuffled stream of padded micro-batches.
//
//   Batcher batcher(config, /*seed=*/1234);
//   Batch batch = batcher.Next();  // micro_batch_size rows; inputs, next-token targets, positions
//
// The data is cut into sequences once, at construction: kJsonl/kText documents are byte-tokenized
// (see byte_tokenizer.h), one sequence per document; a kTokens file is cut into consecutive,
// non-overlapping windows of seq_len + 1 tokens (the incomplete tail is dropped). Sequences are
// truncated to seq_len + 1 tokens. A sequence of L tokens becomes a row of L - 1 inputs
// (tokens 0..L-2) whose targets are the same tokens shifted by one (1..L-1).
//
// Sequences are visited in an order shuffled with std::mt19937_64 seeded by `seed`; after each
// pass (epoch) they are reshuffled with a seed derived from `seed` and the epoch number, so the
// same seed always yields the same batches. A micro-batch that crosses an epoch boundary takes its
// remaining rows from the new epoch, so every batch has exactly micro_batch_size rows.
#pragma once

#include <cstdint>
#include <vector>

#include "memsweep/batch.h"
#include "memsweep/batch_source.h"
#include "memsweep/data_config.h"
#include "memsweep/epoch_order.h"
#include "memsweep/token_sequences.h"

namespace memsweep::data {

class Batcher final : public BatchSource {
 public:
  // Loads and tokenizes `config.path`. Throws DataError if the data cannot be loaded, a token
  // file holds fewer than seq_len + 1 tokens, or seq_len / micro_batch_size is not positive.
  Batcher(const DataConfig& config, uint64_t seed);

  // The next micro-batch: [micro_batch_size, T] int64 CPU tensors, T = seq_len for
  // Padding::kMaxLength, else the longest row of this micro-batch. Inputs are padded with kPadId,
  // targets with kIgnoreIndex; position_ids are 0..T-1 in every row.
  Batch Next() override;

  // Number of sequences in one epoch.
  int64_t NumSequences() const;
  // Largest token id Next() can put into input_ids or targets (kPadId included if rows can be
  // padded), so that a config check can verify vocab_size > MaxTokenId().
  int64_t MaxTokenId() const;
  // Mean tokens per sequence after truncation (a row has one token fewer of inputs/targets).
  double MeanSequenceTokens() const;
  // Completed passes over the data; the next row comes from epoch Epoch() (0-based).
  int64_t Epoch() const;

 private:
  DataConfig config_;
  TokenSequences sequences_;  // truncated to seq_len + 1 tokens
  int64_t max_token_id_ = 0;
  EpochOrder order_;
};

}  // namespace memsweep::data
