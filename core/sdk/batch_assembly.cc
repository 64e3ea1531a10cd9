#include "memsweep/batch_assembly.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#include "core/data/byte_tokenizer.h"
#include "memsweep/token_sequences.h"

namespace memsweep::data {

int64_t RowPositions(const std::vector<TokenSpan>& row) {
  int64_t positions = 0;
  for (const TokenSpan& span : row) positions += span.Positions();
  return positions;
}

Batch AssembleBatch(const std::vector<std::vector<TokenSpan>>& rows, int64_t length,
                    bool with_segments) {
  const auto count = static_cast<int64_t>(rows.size());
  const auto options = at::TensorOptions().dtype(at::kLong).device(at::kCPU);
  Batch batch;
  batch.input_ids = at::empty({count, length}, options);
  batch.targets = at::empty({count, length}, options);
  batch.position_ids = at::empty({count, length}, options);
  if (with_segments) batch.segment_ids = at::empty({count, length}, options);
  int64_t* inputs = batch.input_ids.data_ptr<int64_t>();
  int64_t* targets = batch.targets.data_ptr<int64_t>();
  int64_t* positions = batch.position_ids.data_ptr<int64_t>();
  int64_t* segments = with_segments ? batch.segment_ids.data_ptr<int64_t>() : nullptr;

  for (const std::vector<TokenSpan>& row : rows) {
    const int64_t used = RowPositions(row);
    if (used > length) {
      throw std::invalid_argument("AssembleBatch: a row needs " + std::to_string(used) +
                                  " positions, more than the batch length " +
                                  std::to_string(length));
    }
    int64_t t = 0;
    int64_t segment = 0;
    int64_t next_position = 0;  // padding continues the numbering of the row's last span
    for (const TokenSpan& span : row) {
      if (span.count < 2) {
        throw std::invalid_argument("AssembleBatch: a span needs at least 2 tokens, got " +
                                    std::to_string(span.count));
      }
      for (int64_t i = 0; i + 1 < span.count; ++i, ++t) {
        inputs[t] = TokenId(span.tokens[i]);
        if (IsTarget(span.tokens[i + 1])) {
          targets[t] = span.tokens[i + 1];
          ++batch.real_tokens;
        } else {
          targets[t] = kIgnoreIndex;
        }
        positions[t] = i;
        if (segments) segments[t] = segment;
      }
      ++segment;
      next_position = span.count - 1;
    }
    for (; t < length; ++t, ++next_position) {
      inputs[t] = kPadId;
      targets[t] = kIgnoreIndex;
      positions[t] = next_position;
      if (segments) segments[t] = segment;
    }
    inputs += length;
    targets += length;
    positions += length;
    if (segments) segments += length;
  }
  batch.positions = count * length;
  return batch;
}

}  // namespace memsweep::data
