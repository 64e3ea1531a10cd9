#include "bucketed_batch_source.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>

#include "memsweep/batch_assembly.h"
#include "memsweep/data_error.h"

namespace memsweep::plugins::packing {
namespace {

constexpr int64_t kSmallestDefaultBoundary = 32;

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

data::TokenSequences LoadChecked(const data::DataConfig& config, const BucketOptions& options) {
  if (options.max_rows < 0) throw std::invalid_argument("max_rows must be 0 (no limit) or more");
  if (options.pad_to_multiple < 1) throw std::invalid_argument("pad_to_multiple must be at least 1");
  if (options.max_tokens < 0) {
    throw std::invalid_argument("max_tokens must be 0 (micro_batch_size x seq_len) or more");
  }
  const int64_t max_tokens =
      options.max_tokens > 0 ? options.max_tokens : config.micro_batch_size * config.seq_len;
  if (max_tokens < config.seq_len) {
    throw std::invalid_argument("max_tokens = " + std::to_string(max_tokens) +
                                " is below seq_len = " + std::to_string(config.seq_len) +
                                ": a document of seq_len positions would not fit; raise "
                                "max_tokens or lower seq_len");
  }
  return data::LoadTokenSequences(config, options.long_documents);
}

}  // namespace

std::vector<int64_t> ParseBoundaries(const std::string& text) {
  std::vector<int64_t> boundaries;
  std::stringstream in(text);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    const size_t first = entry.find_first_not_of(" \t");
    if (first == std::string::npos) {
      if (text.find_first_not_of(" \t") == std::string::npos) break;  // "" or blanks: no list
      throw std::invalid_argument("boundaries = \"" + text + "\": empty entry");
    }
    entry = entry.substr(first, entry.find_last_not_of(" \t") - first + 1);
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(entry, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != entry.size() || value < 1) {
      throw std::invalid_argument("boundaries = \"" + text + "\": \"" + entry +
                                  "\" is not a positive whole number of positions");
    }
    if (!boundaries.empty() && value <= boundaries.back()) {
      throw std::invalid_argument("boundaries = \"" + text +
                                  "\": boundaries must increase (" + entry + " after " +
                                  std::to_string(boundaries.back()) + ")");
    }
    boundaries.push_back(value);
  }
  return boundaries;
}

std::vector<int64_t> EffectiveBoundaries(const std::vector<int64_t>& requested, int64_t seq_len) {
  std::vector<int64_t> boundaries;
  if (requested.empty()) {
    for (int64_t b = kSmallestDefaultBoundary; b < seq_len; b *= 2) boundaries.push_back(b);
  } else {
    for (int64_t b : requested) {
      if (b < seq_len) boundaries.push_back(b);
    }
  }
  boundaries.push_back(seq_len);
  return boundaries;
}

BucketedBatchSource::BucketedBatchSource(const data::DataConfig& config, uint64_t seed,
                                         BucketOptions options)
    : config_(config),
      options_(std::move(options)),
      boundaries_(EffectiveBoundaries(options_.boundaries, config.seq_len)),
      sequences_(LoadChecked(config, options_)),
      order_(sequences_.Count(), seed),
      buckets_(boundaries_.size()) {
  max_tokens_ =
      options_.max_tokens > 0 ? options_.max_tokens : config_.micro_batch_size * config_.seq_len;
}

int64_t BucketedBatchSource::BucketOf(int64_t positions) const {
  return std::lower_bound(boundaries_.begin(), boundaries_.end(), positions) - boundaries_.begin();
}

int64_t BucketedBatchSource::RowLength(int64_t bucket, int64_t longest) const {
  if (config_.padding == data::Padding::kMaxLength) return boundaries_[bucket];
  return std::min(RoundUp(longest, options_.pad_to_multiple), config_.seq_len);
}

void BucketedBatchSource::Emit(Bucket& bucket, int64_t bucket_index) {
  ready_.push_back({std::move(bucket.documents), RowLength(bucket_index, bucket.longest)});
  bucket = Bucket();
}

void BucketedBatchSource::Add(int64_t document) {
  const int64_t positions = sequences_.Positions(document);
  const int64_t b = BucketOf(positions);
  Bucket& bucket = buckets_[b];
  const auto rows = static_cast<int64_t>(bucket.documents.size());
  const int64_t length = RowLength(b, std::max(bucket.longest, positions));
  const bool over_budget = (rows + 1) * length > max_tokens_;
  const bool over_rows = options_.max_rows > 0 && rows + 1 > options_.max_rows;
  if (rows > 0 && (over_budget || over_rows)) Emit(bucket, b);
  bucket.documents.push_back(document);
  bucket.longest = std::max(bucket.longest, positions);
}

std::vector<int64_t> BucketedBatchSource::Waiting() const {
  std::vector<int64_t> waiting;
  for (const Bucket& bucket : buckets_) {
    waiting.insert(waiting.end(), bucket.documents.begin(), bucket.documents.end());
  }
  for (const Ready& ready : ready_) {
    waiting.insert(waiting.end(), ready.documents.begin(), ready.documents.end());
  }
  return waiting;
}

data::Batch BucketedBatchSource::Next() {
  while (ready_.empty()) Add(order_.Next());
  Ready next = std::move(ready_.front());
  ready_.pop_front();
  std::vector<std::vector<data::TokenSpan>> rows;
  for (int64_t s : next.documents) rows.push_back({{sequences_.Data(s), sequences_.Length(s)}});
  documents_served_ += static_cast<int64_t>(rows.size());
  ++micro_batches_served_;
  return data::AssembleBatch(rows, next.length, /*with_segments=*/false);
}

}  // namespace memsweep::plugins::packing
