#include "core/data/batcher.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>

#include "core/data/byte_tokenizer.h"
#include "core/data/document_source.h"
#include "core/data/token_file.h"

namespace memsweep::data {
namespace {

uint64_t SplitMix64(uint64_t value) {
  value += 0x9E3779B97F4A7C15ULL;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ULL;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBULL;
  return value ^ (value >> 31);
}

// Epoch 0 uses the seed as given; every later epoch gets its own well-mixed seed.
uint64_t EpochSeed(uint64_t seed, int64_t epoch) {
  if (epoch == 0) return seed;
  return SplitMix64(seed ^ SplitMix64(static_cast<uint64_t>(epoch)));
}

void CheckPositive(int64_t value, const char* key) {
  if (value < 1) {
    throw DataError(std::string("[data] ") + key + " = " + std::to_string(value) +
                    ": must be at least 1");
  }
}

}  // namespace

Batcher::Batcher(const DataConfig& config, uint64_t seed) : config_(config), seed_(seed) {
  CheckPositive(config_.seq_len, "seq_len");
  CheckPositive(config_.micro_batch_size, "micro_batch_size");
  const int64_t max_sequence_tokens = config_.seq_len + 1;

  sequence_starts_.push_back(0);
  if (config_.format == DataFormat::kTokens) {
    tokens_ = LoadTokenFile(config_.path, config_.token_dtype);
    const auto windows = static_cast<int64_t>(tokens_.size()) / max_sequence_tokens;
    if (windows == 0) {
      throw DataError(config_.path + ": " + std::to_string(tokens_.size()) +
                      " tokens, fewer than one sequence of seq_len + 1 = " +
                      std::to_string(max_sequence_tokens) +
                      " tokens: use a larger token file or a smaller [data] seq_len");
    }
    tokens_.resize(static_cast<size_t>(windows * max_sequence_tokens));
    tokens_.shrink_to_fit();
    for (int64_t w = 1; w <= windows; ++w) sequence_starts_.push_back(w * max_sequence_tokens);
  } else {
    for (const std::string& document : LoadTextDocuments(config_)) {
      const std::vector<int32_t> ids = Encode(document);
      const auto kept = std::min<int64_t>(static_cast<int64_t>(ids.size()), max_sequence_tokens);
      tokens_.insert(tokens_.end(), ids.begin(), ids.begin() + kept);
      sequence_starts_.push_back(static_cast<int64_t>(tokens_.size()));
    }
    tokens_.shrink_to_fit();
  }

  max_token_id_ = *std::max_element(tokens_.begin(), tokens_.end());
  for (int64_t s = 0; s < NumSequences(); ++s) {
    if (SequenceLength(s) < max_sequence_tokens) {
      max_token_id_ = std::max<int64_t>(max_token_id_, kPadId);
      break;
    }
  }

  order_.resize(static_cast<size_t>(NumSequences()));
  batch_sequences_.resize(static_cast<size_t>(config_.micro_batch_size));
  ShuffleForCurrentEpoch();
}

int64_t Batcher::NumSequences() const { return static_cast<int64_t>(sequence_starts_.size()) - 1; }

int64_t Batcher::MaxTokenId() const { return max_token_id_; }

double Batcher::MeanSequenceTokens() const {
  return static_cast<double>(tokens_.size()) / static_cast<double>(NumSequences());
}

int64_t Batcher::Epoch() const { return epoch_; }

int64_t Batcher::SequenceLength(int64_t sequence) const {
  return sequence_starts_[sequence + 1] - sequence_starts_[sequence];
}

void Batcher::ShuffleForCurrentEpoch() {
  // Fisher-Yates with the engine's raw output (std::shuffle's use of the engine is
  // implementation-defined, which would make batches differ between standard libraries).
  std::iota(order_.begin(), order_.end(), int64_t{0});
  std::mt19937_64 engine(EpochSeed(seed_, epoch_));
  for (size_t i = order_.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(engine() % i);
    std::swap(order_[i - 1], order_[j]);
  }
  cursor_ = 0;
}

Batch Batcher::Next() {
  const int64_t rows = config_.micro_batch_size;
  int64_t longest_row = 0;
  for (int64_t r = 0; r < rows; ++r) {
    batch_sequences_[r] = order_[cursor_];
    longest_row = std::max(longest_row, SequenceLength(batch_sequences_[r]) - 1);
    if (++cursor_ == NumSequences()) {
      ++epoch_;
      ShuffleForCurrentEpoch();
    }
  }
  const int64_t length = config_.padding == Padding::kMaxLength ? config_.seq_len : longest_row;

  const auto options = at::TensorOptions().dtype(at::kLong).device(at::kCPU);
  Batch batch;
  batch.input_ids = at::empty({rows, length}, options);
  batch.targets = at::empty({rows, length}, options);
  batch.position_ids = at::empty({rows, length}, options);
  int64_t* inputs = batch.input_ids.data_ptr<int64_t>();
  int64_t* targets = batch.targets.data_ptr<int64_t>();
  int64_t* positions = batch.position_ids.data_ptr<int64_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* sequence = tokens_.data() + sequence_starts_[batch_sequences_[r]];
    const int64_t row_tokens = SequenceLength(batch_sequences_[r]) - 1;
    int64_t t = 0;
    for (; t < row_tokens; ++t) {
      inputs[t] = sequence[t];
      targets[t] = sequence[t + 1];
      positions[t] = t;
    }
    for (; t < length; ++t) {
      inputs[t] = kPadId;
      targets[t] = kIgnoreIndex;
      positions[t] = t;
    }
    batch.real_tokens += row_tokens;
    inputs += length;
    targets += length;
    positions += length;
  }
  batch.positions = rows * length;
  return batch;
}

}  // namespace memsweep::data

namespace memsweep::data {
BatchSource::~BatchSource() = default;
}  // namespace memsweep::data
