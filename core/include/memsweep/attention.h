// The attention core as a replaceable function: the model projects q, k, v and applies rotary
// embeddings, then hands them to an AttentionFn, which returns the attended values. The
// attention slot's plugin provides it (plugins/attention/).
//
//   model->SetAttention([](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
//                          const AttentionInputs& in) { ... });
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>

namespace memsweep::model {

// What attention needs to know about the batch besides q, k, v.
struct AttentionInputs {
  at::Tensor position_ids;  // [B, T] int64
  // [B, T] int64 document index of each position when rows hold several documents (packing):
  // a position attends only to earlier positions of the same document. Undefined: one
  // document per row.
  at::Tensor segment_ids;
};

// q: [B, H, T, D]; k, v: [B, KV, T, D] with H a multiple of KV (grouped-query attention: query
// head h reads key/value head h / (H / KV)). Returns causal attention output [B, H, T, D].
using AttentionFn = std::function<at::Tensor(const at::Tensor& q, const at::Tensor& k,
                                             const at::Tensor& v, const AttentionInputs& inputs)>;

// Repeats each key/value head H/KV times so that it lines up with its query heads.
at::Tensor RepeatKvHeads(const at::Tensor& kv, int64_t num_query_heads);

}  // namespace memsweep::model
