#include "eager_attention.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

#include "memsweep/allocation_label.h"
#include "memsweep/compute_device.h"

namespace memsweep::plugins {
namespace {

// [T, T]: 0 where a query position may attend to a key position (an earlier or the same one),
// -inf above the diagonal.
at::Tensor CausalBias(int64_t t, const at::TensorOptions& options) {
  const at::Tensor hidden = at::ones({t, t}, options.dtype(at::kBool)).triu(1);
  return at::zeros({t, t}, options).masked_fill_(hidden, -std::numeric_limits<double>::infinity());
}

// [B, 1, T, T]: -inf where query and key lie in different documents (segment ids), 0 elsewhere.
at::Tensor OtherDocumentBias(const at::Tensor& segment_ids, const at::TensorOptions& options) {
  const at::Tensor other = (segment_ids.unsqueeze(2) != segment_ids.unsqueeze(1)).unsqueeze(1);
  return at::zeros(other.sizes(), options)
      .masked_fill_(other, -std::numeric_limits<double>::infinity());
}

// Whether the scale and the causal bias go into the GEMM (baddbmm's alpha and beta): on the CPU,
// where the result is bitwise that of scaling afterwards whenever the scale is a power of two
// (head_dim 16, 64, 256), in fp32, under bf16 autocast and with bf16 parameters
// (tests/plugins/attention/eager/). CUDA keeps the op-by-op form: not verified there.
bool FoldsScaleIntoGemm(const at::Tensor& q) {
  return memsweep::ComputeDevice(q) == c10::DeviceType::CPU;  // an estimate of a CPU run too
}

}  // namespace

at::Tensor EagerCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const model::AttentionInputs& inputs) {
  const int64_t heads = q.size(1), t = q.size(2), d = q.size(3);
  const at::Tensor keys = model::RepeatKvHeads(k, heads);
  const at::Tensor values = model::RepeatKvHeads(v, heads);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  memory::AllocationLabel label("attention scores");
  at::Tensor scores;
  if (FoldsScaleIntoGemm(q)) {
    // scores = scale·(q·kᵀ) + causal bias in one batched GEMM (baddbmm: alpha = scale, beta = 1
    // over the [T, T] bias broadcast to every head): no separate pass over B x H x T x T to scale
    // or to mask, forward or backward (autograd scales q·kᵀ's two [T, D]-sized gradients instead
    // of the [T, T] one). The GEMM keeps its two operands for backward, as the matmul below does.
    const int64_t batch = q.size(0);
    const at::Tensor q3 = q.reshape({batch * heads, t, d});
    const at::Tensor kt3 = keys.transpose(-2, -1).reshape({batch * heads, d, t});
    scores = at::baddbmm(CausalBias(t, q.options()), q3, kt3, /*beta=*/1.0, /*alpha=*/scale)
                 .view({batch, heads, t, t});
  } else {
    // The scaled matmul's output is updated in place: neither the matmul nor the scaling keeps
    // it for backward, so no second scores-sized tensor exists.
    scores = at::matmul(q, keys.transpose(-2, -1)).mul_(scale);
    scores.add_(CausalBias(t, scores.options()));
  }
  // The bias holds 0 or -inf: s + 0 = s and s + -inf = -inf, so the values are those of a
  // masked_fill, and softmax gives the hidden positions probability 0, so the gradients are too
  // (one vectorised pass, no bool mask kept for backward). Packed rows add the other-document
  // bias in place.
  if (inputs.segment_ids.defined()) {
    scores.add_(OtherDocumentBias(inputs.segment_ids, scores.options()));
  }
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
