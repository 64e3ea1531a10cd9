#include "sdpa_attention.h"

#include <ATen/ATen.h>

namespace memsweep::plugins {

at::Tensor SdpaCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const model::AttentionInputs& inputs) {
  const bool grouped = k.size(1) != q.size(1);
  if (!inputs.segment_ids.defined()) {
    return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, 0.0, /*is_causal=*/true,
                                            /*scale=*/std::nullopt, /*enable_gqa=*/grouped);
  }
  // Packed rows: attend to earlier positions of the same document only (true = attend).
  const int64_t t = q.size(2);
  const at::Tensor causal = at::ones({t, t}, q.options().dtype(at::kBool)).tril();
  const at::Tensor same_document =
      inputs.segment_ids.unsqueeze(2) == inputs.segment_ids.unsqueeze(1);  // [B, T, T]
  const at::Tensor allowed = (causal.unsqueeze(0) & same_document).unsqueeze(1);
  return at::scaled_dot_product_attention(q, k, v, allowed, 0.0, /*is_causal=*/false,
                                          /*scale=*/std::nullopt, /*enable_gqa=*/grouped);
}

}  // namespace memsweep::plugins
