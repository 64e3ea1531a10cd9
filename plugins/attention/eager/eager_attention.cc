#include "eager_attention.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

namespace memsweep::plugins {

at::Tensor EagerCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const model::AttentionInputs& inputs) {
  const int64_t heads = q.size(1), t = q.size(2), d = q.size(3);
  const at::Tensor keys = model::RepeatKvHeads(k, heads);
  const at::Tensor values = model::RepeatKvHeads(v, heads);
  at::Tensor scores =
      at::matmul(q, keys.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(d)));
  at::Tensor hidden = at::ones({t, t}, q.options().dtype(at::kBool)).triu(1);  // [T, T]
  if (inputs.segment_ids.defined()) {
    const at::Tensor other_document =
        inputs.segment_ids.unsqueeze(2) != inputs.segment_ids.unsqueeze(1);  // [B, T, T]
    hidden = (hidden.unsqueeze(0) | other_document).unsqueeze(1);            // [B, 1, T, T]
  }
  scores = scores.masked_fill(hidden, -std::numeric_limits<float>::infinity());
  at::Tensor probs;
  if (scores.scalar_type() == at::kBFloat16 && v.scalar_type() == at::kBFloat16) {
    // bf16 scores (autocast, bf16 parameters): LibTorch's CPU softmax kernel accumulates bf16 in
    // fp32 and rounds its output, which equals an fp32 softmax cast to bf16 — but autograd then
    // keeps only the bf16 probabilities (2 B per score) instead of fp32 ones plus their bf16
    // copy (4 + 2 B), and no fp32 T x T matrix is written.
    probs = at::softmax(scores, -1);
  } else {
    const auto softmax_dtype = q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
    probs = at::softmax(scores, -1, softmax_dtype).to(v.scalar_type());
  }
  return at::matmul(probs, values);
}

}  // namespace memsweep::plugins
