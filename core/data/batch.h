// Batch: one micro-batch as the training loop consumes it.
//
// Rows are right-padded. `targets` holds the next token for each input position, or
// kIgnoreIndex where there is none (padding, the last position of a document); the loss counts
// only targets != kIgnoreIndex, which is also what `real_tokens` counts.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace memsweep::data {

constexpr int64_t kIgnoreIndex = -100;

struct Batch {
  at::Tensor input_ids;     // [B, T] int64
  at::Tensor targets;       // [B, T] int64, kIgnoreIndex where no loss is taken
  at::Tensor position_ids;  // [B, T] int64, 0..len-1 per row (padding positions continue)
  // [B, T] int64 document index per position when a row holds several documents (packing);
  // undefined when every row is one document.
  at::Tensor segment_ids;
  int64_t real_tokens = 0;  // number of targets != kIgnoreIndex
  int64_t positions = 0;    // B * T: every position the model computes, padding included
  int64_t Rows() const { return input_ids.size(0); }
  int64_t Length() const { return input_ids.size(1); }
};

}  // namespace memsweep::data
