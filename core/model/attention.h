// The attention core as a replaceable function: the model projects q, k, v and applies rotary
// embeddings, then hands them to an AttentionFn, which returns the attended values. Strategies
// (chunked, fused kernels) replace this function; the eager one here is the reference.
//
//   model->SetAttention(EagerCausalAttention);
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>

namespace memsweep::model {

// q: [B, H, T, D]; k, v: [B, KV, T, D] with H a multiple of KV (grouped-query attention: query
// head h reads key/value head h / (H / KV)). Returns causal attention output [B, H, T, D].
using AttentionFn = std::function<at::Tensor(const at::Tensor& q, const at::Tensor& k,
                                             const at::Tensor& v)>;

// softmax(q·kᵀ/√D + causal mask)·v with the full score matrix materialised.
at::Tensor EagerCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// Repeats each key/value head H/KV times so that it lines up with its query heads.
at::Tensor RepeatKvHeads(const at::Tensor& kv, int64_t num_query_heads);

}  // namespace memsweep::model
