#include "concat_batch_source.h"

#include <string>

#include "memsweep/batch_assembly.h"
#include "memsweep/data_error.h"

namespace memsweep::plugins::packing {
namespace {

data::TokenSequences LoadChecked(const data::DataConfig& config) {
  if (config.micro_batch_size < 1) {
    throw data::DataError("[strategies.batching] micro_batch_size = " +
                          std::to_string(config.micro_batch_size) + ": must be at least 1");
  }
  return data::LoadTokenSequences(config, data::LongDocuments::kKeep);
}

}  // namespace

ConcatBatchSource::ConcatBatchSource(const data::DataConfig& config, uint64_t seed)
    : config_(config), sequences_(LoadChecked(config)), order_(sequences_.Count(), seed) {
  current_ = order_.Next();
}

int32_t ConcatBatchSource::NextToken() {
  if (offset_ == sequences_.Length(current_)) {
    current_ = order_.Next();
    offset_ = 0;
  }
  return sequences_.Data(current_)[offset_++];
}

data::Batch ConcatBatchSource::Next() {
  const int64_t row_tokens = config_.seq_len + 1;
  std::vector<std::vector<int32_t>> buffers(static_cast<size_t>(config_.micro_batch_size));
  for (std::vector<int32_t>& buffer : buffers) {
    buffer = carry_;
    while (static_cast<int64_t>(buffer.size()) < row_tokens) buffer.push_back(NextToken());
    carry_.assign(1, buffer.back());
  }
  std::vector<std::vector<data::TokenSpan>> rows;
  for (const std::vector<int32_t>& buffer : buffers) {
    rows.push_back({{buffer.data(), row_tokens}});
  }
  return data::AssembleBatch(rows, config_.seq_len, /*with_segments=*/false);
}

}  // namespace memsweep::plugins::packing
