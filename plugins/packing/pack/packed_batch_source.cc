#include "packed_batch_source.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "memsweep/batch_assembly.h"
#include "memsweep/data_error.h"

namespace memsweep::plugins::packing {
namespace {

// Separates the row-order stream from the epoch-order stream of the same seed.
constexpr uint64_t kRowShuffleSalt = 0x7061636B726F7773ULL;  // "packrows"

data::TokenSequences LoadChecked(const data::DataConfig& config, const PackOptions& options) {
  if (config.micro_batch_size < 1) {
    throw data::DataError("[strategies.batching] micro_batch_size = " +
                          std::to_string(config.micro_batch_size) + ": must be at least 1");
  }
  if (options.window < 1) {
    throw std::invalid_argument("window = " + std::to_string(options.window) +
                                ": must be at least 1 document");
  }
  return data::LoadTokenSequences(config, options.long_documents);
}

}  // namespace

PackedBatchSource::PackedBatchSource(const data::DataConfig& config, uint64_t seed,
                                     PackOptions options)
    : config_(config),
      seed_(seed),
      options_(options),
      sequences_(LoadChecked(config, options)),
      order_(sequences_.Count(), seed) {}

void PackedBatchSource::PackNextWindow() {
  std::vector<int64_t> documents(static_cast<size_t>(options_.window));
  std::vector<int64_t> sizes(documents.size());
  for (size_t i = 0; i < documents.size(); ++i) {
    documents[i] = order_.Next();
    sizes[i] = sequences_.Positions(documents[i]);
  }
  const std::vector<std::vector<int64_t>> bins =
      PackBins(sizes, config_.seq_len, options_.algorithm);
  // Bins come out largest documents first; serve them in a seeded random order instead, so that
  // the length of what a step trains on does not drift through each window.
  std::vector<int64_t> bin_order(bins.size());
  std::iota(bin_order.begin(), bin_order.end(), int64_t{0});
  data::SeededShuffle(bin_order, data::DeriveSeed(seed_ ^ kRowShuffleSalt, windows_));
  for (int64_t b : bin_order) {
    std::vector<int64_t> row;
    for (int64_t item : bins[b]) row.push_back(documents[item]);
    rows_.push_back(std::move(row));
  }
  ++windows_;
}

data::Batch PackedBatchSource::Next() {
  const auto count = static_cast<size_t>(config_.micro_batch_size);
  while (rows_.size() < count) PackNextWindow();

  std::vector<std::vector<data::TokenSpan>> rows;
  int64_t longest = 0;
  for (size_t r = 0; r < count; ++r) {
    std::vector<data::TokenSpan> packed;
    for (int64_t s : rows_.front()) packed.push_back({sequences_.Data(s), sequences_.Length(s)});
    rows_.pop_front();
    documents_served_ += static_cast<int64_t>(packed.size());
    if (options_.layout == RowLayout::kPacked) {
      longest = std::max(longest, data::RowPositions(packed));
      rows.push_back(std::move(packed));
      continue;
    }
    for (const data::TokenSpan& span : packed) {
      longest = std::max(longest, span.Positions());
      rows.push_back({span});
    }
  }
  rows_served_ += static_cast<int64_t>(count);
  const int64_t length = config_.padding == data::Padding::kMaxLength ? config_.seq_len : longest;
  return data::AssembleBatch(rows, length, options_.layout == RowLayout::kPacked);
}

}  // namespace memsweep::plugins::packing
