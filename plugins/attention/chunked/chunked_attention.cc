#include "chunked_attention.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace memsweep::plugins {

at::Tensor ChunkedCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const model::AttentionInputs& inputs, int64_t block) {
  const int64_t b = q.size(0), heads = q.size(1), t = q.size(2), d = q.size(3);
  const int64_t kv_heads = k.size(1), group = heads / kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const auto softmax_dtype = q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor grouped_q = q.reshape({b, kv_heads, group, t, d});
  const at::Tensor positions = at::arange(t, q.options().dtype(at::kLong));
  std::vector<at::Tensor> blocks;
  for (int64_t i0 = 0; i0 < t; i0 += block) {
    const int64_t rows = std::min(block, t - i0), keys = i0 + rows;  // causal: keys < i0 + rows
    const at::Tensor q_block = grouped_q.narrow(3, i0, rows).reshape({b, kv_heads, group * rows, d});
    const at::Tensor k_seen = k.narrow(2, 0, keys), v_seen = v.narrow(2, 0, keys);
    at::Tensor scores = (at::matmul(q_block, k_seen.transpose(-2, -1)) * scale)
                            .view({b, kv_heads, group, rows, keys});
    // hidden[i][j]: key j comes after query i0 + i, or (packed rows) belongs to another document.
    at::Tensor hidden = positions.narrow(0, 0, keys).unsqueeze(0) >
                        positions.narrow(0, i0, rows).unsqueeze(1);  // [rows, keys]
    if (inputs.segment_ids.defined()) {
      const at::Tensor other = inputs.segment_ids.narrow(1, i0, rows).unsqueeze(2) !=
                               inputs.segment_ids.narrow(1, 0, keys).unsqueeze(1);  // [B, rows, keys]
      hidden = hidden.unsqueeze(0) | other;
    } else {
      hidden = hidden.unsqueeze(0);
    }
    scores = scores.masked_fill(hidden.view({hidden.size(0), 1, 1, rows, keys}),
                                -std::numeric_limits<double>::infinity());
    const at::Tensor probs = at::softmax(scores, -1, softmax_dtype).to(v.scalar_type());
    const at::Tensor out = at::matmul(probs.view({b, kv_heads, group * rows, keys}), v_seen);
    blocks.push_back(out.view({b, heads, rows, d}));
  }
  return at::cat(blocks, 2);
}

model::AttentionFn MakeChunkedAttention(int64_t block) {
  return [block](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                 const model::AttentionInputs& inputs) {
    return ChunkedCausalAttention(q, k, v, inputs, block);
  };
}

}  // namespace memsweep::plugins
