// Batch: one micro-batch as the training loop consumes it.
//
// Rows are right-padded. `targets` holds the next token for each input position, or
// kIgnoreIndex where there is none (padding); the loss counts only targets != kIgnoreIndex, which
// is also what `real_tokens` counts. The number of rows may change from one micro-batch to the
// next (length-bucketed sources); the trainer normalises the loss over the real tokens of the
// whole optimizer step.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace memsweep::data {

constexpr int64_t kIgnoreIndex = -100;

struct Batch {
  at::Tensor input_ids;     // [B, T] int64
  at::Tensor targets;       // [B, T] int64, kIgnoreIndex where no loss is taken
  // [B, T] int64 position of each token within its document: 0..len-1 along a row, restarting
  // at each document of a packed row; padding positions continue the last document's numbering.
  at::Tensor position_ids;
  // [B, T] int64 document index per position when a row holds several documents (packing):
  // 0, 1, 2 ... along each row, never decreasing, trailing padding one more segment of its own
  // (batch_assembly.h). Undefined when every row is one document.
  at::Tensor segment_ids;
  int64_t real_tokens = 0;  // number of targets != kIgnoreIndex
  int64_t positions = 0;    // B * T: every position the model computes, padding included
  int64_t Rows() const { return input_ids.size(0); }
  int64_t Length() const { return input_ids.size(1); }
};

}  // namespace memsweep::data
