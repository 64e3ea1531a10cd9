// Helpers for the packing plugins' tests: data configs and reading documents back out of a Batch.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "memsweep/batch.h"
#include "memsweep/data_config.h"
#include "memsweep/token_sequences.h"

namespace memsweep::testing_support {

inline data::DataConfig DevilsDictionary(int64_t seq_len, int64_t micro_batch_size,
                                         data::Padding padding = data::Padding::kLongest) {
  data::DataConfig config;
  config.path = std::string(MEMSWEEP_SOURCE_DIR) + "/experiments/data/devils-dictionary.jsonl";
  config.format = data::DataFormat::kJsonl;
  config.seq_len = seq_len;
  config.micro_batch_size = micro_batch_size;
  config.padding = padding;
  return config;
}

inline std::vector<int64_t> RowOf(const at::Tensor& matrix, int64_t row) {
  const at::Tensor values = matrix[row].contiguous();
  return std::vector<int64_t>(values.data_ptr<int64_t>(),
                              values.data_ptr<int64_t>() + values.numel());
}

// The token sequences a batch trains on, read back from it: for each run of real positions of one
// segment (one row when the batch has no segment ids), its inputs followed by its last target.
inline std::vector<std::vector<int32_t>> SpansOf(const data::Batch& batch) {
  std::vector<std::vector<int32_t>> spans;
  for (int64_t r = 0; r < batch.Rows(); ++r) {
    const std::vector<int64_t> inputs = RowOf(batch.input_ids, r);
    const std::vector<int64_t> targets = RowOf(batch.targets, r);
    const std::vector<int64_t> segments =
        batch.segment_ids.defined() ? RowOf(batch.segment_ids, r)
                                    : std::vector<int64_t>(inputs.size(), 0);
    std::vector<int32_t> span;
    for (size_t t = 0; t < inputs.size(); ++t) {
      if (targets[t] == data::kIgnoreIndex) continue;
      span.push_back(static_cast<int32_t>(inputs[t]));
      const bool last = t + 1 == inputs.size() || segments[t + 1] != segments[t] ||
                        targets[t + 1] == data::kIgnoreIndex;
      if (!last) continue;
      span.push_back(static_cast<int32_t>(targets[t]));
      spans.push_back(std::move(span));
      span.clear();
    }
  }
  return spans;
}

inline std::vector<std::vector<int32_t>> AllSequences(const data::TokenSequences& sequences) {
  std::vector<std::vector<int32_t>> all;
  for (int64_t s = 0; s < sequences.Count(); ++s) {
    all.emplace_back(sequences.Data(s), sequences.Data(s) + sequences.Length(s));
  }
  return all;
}

template <typename T>
std::vector<T> Sorted(std::vector<T> values) {
  std::sort(values.begin(), values.end());
  return values;
}

}  // namespace memsweep::testing_support
