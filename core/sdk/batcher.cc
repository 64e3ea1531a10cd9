#include "memsweep/batcher.h"

#include <algorithm>
#include <string>

#include "memsweep/batch_assembly.h"
#include "core/data/byte_tokenizer.h"
#include "core/data/document_source.h"

namespace memsweep::data {
namespace {

void CheckPositive(int64_t value, const char* key) {
  if (value < 1) {
    throw DataError(std::string("[strategies.batching] ") + key + " = " + std::to_string(value) +
                    ": must be at least 1");
  }
}

TokenSequences LoadChecked(const DataConfig& config) {
  CheckPositive(config.seq_len, "seq_len");
  CheckPositive(config.micro_batch_size, "micro_batch_size");
  return LoadTokenSequences(config, LongDocuments::kTruncate);
}

}  // namespace

Batcher::Batcher(const DataConfig& config, uint64_t seed)
    : config_(config), sequences_(LoadChecked(config)), order_(sequences_.Count(), seed) {
  for (const int32_t stored : sequences_.tokens) {
    max_token_id_ = std::max<int64_t>(max_token_id_, TokenId(stored));
  }
  for (int64_t s = 0; s < NumSequences(); ++s) {
    if (sequences_.Length(s) < config_.seq_len + 1) {
      max_token_id_ = std::max<int64_t>(max_token_id_, kPadId);
      break;
    }
  }
}

int64_t Batcher::NumSequences() const { return sequences_.Count(); }

int64_t Batcher::MaxTokenId() const { return max_token_id_; }

double Batcher::MeanSequenceTokens() const {
  return static_cast<double>(sequences_.tokens.size()) / static_cast<double>(NumSequences());
}

int64_t Batcher::Epoch() const { return order_.Epoch(); }

Batch Batcher::Next() {
  int64_t longest_row = 0;
  std::vector<std::vector<TokenSpan>> rows(static_cast<size_t>(config_.micro_batch_size));
  for (auto& row : rows) {
    const int64_t s = order_.Next();
    row.push_back({sequences_.Data(s), sequences_.Length(s)});
    longest_row = std::max(longest_row, sequences_.Positions(s));
  }
  const int64_t length = config_.padding == Padding::kMaxLength ? config_.seq_len : longest_row;
  return AssembleBatch(rows, length, /*with_segments=*/false);
}

}  // namespace memsweep::data

namespace memsweep::data {
BatchSource::~BatchSource() = default;
}  // namespace memsweep::data
