#include "eager_attention.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

namespace memsweep::plugins {
namespace {

// [T, T] (one document per row) or [B, 1, T, T] (segment ids): 0 where a query position may
// attend to a key position (an earlier or the same position of the same document), -inf elsewhere.
at::Tensor MaskBias(int64_t t, const at::Tensor& segment_ids, const at::TensorOptions& options) {
  at::Tensor hidden = at::ones({t, t}, options.dtype(at::kBool)).triu(1);  // [T, T]
  if (segment_ids.defined()) {
    const at::Tensor other_document = segment_ids.unsqueeze(2) != segment_ids.unsqueeze(1);
    hidden = (hidden.unsqueeze(0) | other_document).unsqueeze(1);  // [B, 1, T, T]
  }
  return at::zeros(hidden.sizes(), options)
      .masked_fill_(hidden, -std::numeric_limits<double>::infinity());
}

}  // namespace

at::Tensor EagerCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const model::AttentionInputs& inputs) {
  const int64_t heads = q.size(1), t = q.size(2), d = q.size(3);
  const at::Tensor keys = model::RepeatKvHeads(k, heads);
  const at::Tensor values = model::RepeatKvHeads(v, heads);
  // The mask is added to the scores in place: 0 where a position may attend, -inf where it may
  // not. Same values as a masked_fill (s + 0 = s, s + -inf = -inf) and, since softmax gives the
  // hidden positions probability 0, the same gradients — but one vectorised pass instead of a
  // masked_fill forward and backward over B x H x T x T, no bool mask kept for backward, and no
  // extra scores-sized tensor (the scaled matmul output is updated in place; neither the matmul
  // nor the scaling keeps it for backward).
  at::Tensor scores =
      at::matmul(q, keys.transpose(-2, -1)).mul_(1.0 / std::sqrt(static_cast<double>(d)));
  scores.add_(MaskBias(t, inputs.segment_ids, scores.options()));
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
