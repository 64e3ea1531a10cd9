// ConcatBatchSource: the packing/concat batch source, naive concatenation as many training
// scripts' pack_sequences do. Documents, in the seeded epoch order, are joined into one token
// stream (each keeps its BOS and EOS; EOS is the separator); every row is the next seq_len + 1
// tokens of the stream, and the next row starts on the last token of the previous one, so every
// token after the first is a target exactly once.
//
//   ConcatBatchSource source(config, seed);
//   Batch batch = source.Next();  // [micro_batch_size, seq_len], no padding, no segment ids
//
// NOT equivalent to training on the documents one at a time: a document attends to the documents
// before it in the row, its position ids do not restart, and the EOS of one document is trained
// to predict the BOS of the next. Long documents simply continue into the next row.
#pragma once

#include <cstdint>
#include <vector>

#include "memsweep/batch_source.h"
#include "memsweep/data_config.h"
#include "memsweep/epoch_order.h"
#include "memsweep/token_sequences.h"

namespace memsweep::plugins::packing {

class ConcatBatchSource final : public data::BatchSource {
 public:
  // Throws data::DataError when the data cannot be loaded or seq_len / micro_batch_size is not
  // positive.
  ConcatBatchSource(const data::DataConfig& config, uint64_t seed);

  data::Batch Next() override;


 private:
  int32_t NextToken();

  data::DataConfig config_;
  data::TokenSequences sequences_;  // whole documents (a token file is one sequence)
  data::EpochOrder order_;
  int64_t current_ = 0;  // the document being read
  int64_t offset_ = 0;   // next token of it
  std::vector<int32_t> carry_;  // the last token of the previous row
};

}  // namespace memsweep::plugins::packing
