// BucketedBatchSource: the packing/bucketed batch source, length-bucketed dynamic batching (the
// memory-aware loader of seed 004, made deterministic). Documents arrive in the seeded epoch
// order and wait in the bucket of their length; a bucket becomes a micro-batch as soon as one more
// document would push rows x padded length over the token budget (or rows over max_rows).
// Documents of similar length share a micro-batch, so little is padded, and every micro-batch
// costs at most max_tokens positions whatever its lengths: short documents make micro-batches of
// many rows, long ones of few.
//
//   BucketOptions options;
//   options.max_tokens = 2048;
//   options.boundaries = {64, 128, 256};
//   BucketedBatchSource source(config, seed, options);
//   Batch batch = source.Next();  // rows x T <= 2048, all rows from one bucket
//
// A bucket b holds documents of boundaries[b-1] < positions <= boundaries[b]. The row length of a
// micro-batch is its longest document rounded up to pad_to_multiple (Padding::kLongest) or the
// bucket's upper boundary (Padding::kMaxLength: one fixed shape per bucket), never beyond seq_len.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "memsweep/batch_source.h"
#include "memsweep/data_config.h"
#include "memsweep/epoch_order.h"
#include "memsweep/token_sequences.h"

namespace memsweep::plugins::packing {

struct BucketOptions {
  int64_t max_tokens = 0;            // positions (rows x T) per micro-batch; 0: mbs x seq_len
  int64_t max_rows = 0;              // 0: no limit
  std::vector<int64_t> boundaries;   // increasing; empty: powers of two from 32, then seq_len
  int64_t pad_to_multiple = 8;
  data::LongDocuments long_documents = data::LongDocuments::kTruncate;
};

// Parses "64, 128, 256" into increasing positive numbers; "" gives an empty list. Throws
// std::invalid_argument naming the bad entry.
std::vector<int64_t> ParseBoundaries(const std::string& text);

// The boundaries a source uses for `seq_len`: `requested` cut below seq_len (or the default
// powers of two from 32), with seq_len itself as the last.
std::vector<int64_t> EffectiveBoundaries(const std::vector<int64_t>& requested, int64_t seq_len);

class BucketedBatchSource final : public data::BatchSource {
 public:
  // Throws data::DataError when the data cannot be loaded, std::invalid_argument when
  // max_tokens < seq_len (a longest document would not fit) or another option is out of range.
  BucketedBatchSource(const data::DataConfig& config, uint64_t seed, BucketOptions options);

  data::Batch Next() override;

  const data::TokenSequences& Sequences() const { return sequences_; }
  const std::vector<int64_t>& Boundaries() const { return boundaries_; }
  int64_t MaxTokens() const { return max_tokens_; }
  int64_t DocumentsServed() const { return documents_served_; }
  int64_t MicroBatchesServed() const { return micro_batches_served_; }
  // Documents drawn but not yet served: waiting in their bucket or in a formed micro-batch.
  std::vector<int64_t> Waiting() const;

 private:
  struct Bucket {
    std::vector<int64_t> documents;
    int64_t longest = 0;
  };
  int64_t BucketOf(int64_t positions) const;
  int64_t RowLength(int64_t bucket, int64_t longest) const;
  void Add(int64_t document);
  void Emit(Bucket& bucket, int64_t bucket_index);

  data::DataConfig config_;
  BucketOptions options_;
  std::vector<int64_t> boundaries_;
  int64_t max_tokens_ = 0;
  data::TokenSequences sequences_;
  data::EpochOrder order_;
  std::vector<Bucket> buckets_;
  struct Ready {
    std::vector<int64_t> documents;
    int64_t length = 0;
  };
  std::deque<Ready> ready_;
  int64_t documents_served_ = 0;
  int64_t micro_batches_served_ = 0;
};

}  // namespace memsweep::plugins::packing
