// PackedBatchSource: the packing/pack batch source. Documents are taken in the seeded epoch
// order, a window at a time; each window is bin-packed into rows of seq_len positions
// (bin_packer.h), the rows are shuffled (seeded) and served micro_batch_size at a time.
//
//   PackedBatchSource source(config, seed, PackOptions{});
//   Batch batch = source.Next();  // micro_batch_size rows with segment ids
//
// Row layout (memsweep/batch_assembly.h): a document of n tokens fills n - 1 positions, its
// position ids restart at 0, it has its own segment id, and its targets never leave it. With
// RowLayout::kPadded the same documents are served, micro-batch for micro-batch, one per row and
// padded: the unpacked reference that trains on exactly the same documents in every step.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "bin_packer.h"
#include "memsweep/batch_source.h"
#include "memsweep/data_config.h"
#include "memsweep/epoch_order.h"
#include "memsweep/token_sequences.h"

namespace memsweep::plugins::packing {

enum class RowLayout : uint8_t {
  kPacked,  // several documents per row, segment ids set
  kPadded,  // the same micro-batch's documents one per row (no segment ids)
};

struct PackOptions {
  int64_t window = 1000;  // documents bin-packed together
  PackingAlgorithm algorithm = PackingAlgorithm::kFirstFitDecreasing;
  data::LongDocuments long_documents = data::LongDocuments::kTruncate;
  RowLayout layout = RowLayout::kPacked;
};

class PackedBatchSource final : public data::BatchSource {
 public:
  // Throws data::DataError when the data cannot be loaded or seq_len / micro_batch_size is not
  // positive, std::invalid_argument when the window is not positive.
  PackedBatchSource(const data::DataConfig& config, uint64_t seed, PackOptions options);

  // The next micro_batch_size packed rows (kPacked: [micro_batch_size, T]; kPadded: one row per
  // document of those rows). T = seq_len with Padding::kMaxLength, else the longest row.
  data::Batch Next() override;

  const data::TokenSequences& Sequences() const { return sequences_; }
  int64_t WindowsPacked() const { return windows_; }
  int64_t PackedRowsServed() const { return rows_served_; }
  int64_t DocumentsServed() const { return documents_served_; }

 private:
  void PackNextWindow();

  data::DataConfig config_;
  uint64_t seed_;
  PackOptions options_;
  data::TokenSequences sequences_;
  data::EpochOrder order_;
  std::deque<std::vector<int64_t>> rows_;  // packed rows (sequence indices) not yet served
  int64_t windows_ = 0;
  int64_t rows_served_ = 0;
  int64_t documents_served_ = 0;
};

}  // namespace memsweep::plugins::packing
