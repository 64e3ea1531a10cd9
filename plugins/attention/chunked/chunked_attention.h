// Chunked causal attention in ATen ops: queries are processed in blocks of `block` rows, each
// against only the keys up to its own last row, so the score matrix of one step is
// [B, H, block, ≤ T] instead of [B, H, T, T]. Grouped-query heads reach their key/value head by
// folding the group into the query rows (no repeated k, v); packed batches are masked per
// document from AttentionInputs.segment_ids, as eager does.
//
//   model->SetAttention(MakeChunkedAttention(/*block=*/128));
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "memsweep/attention.h"

namespace memsweep::plugins {

at::Tensor ChunkedCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const model::AttentionInputs& inputs, int64_t block);

model::AttentionFn MakeChunkedAttention(int64_t block);

}  // namespace memsweep::plugins
