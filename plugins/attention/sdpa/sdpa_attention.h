// Causal attention through LibTorch's at::scaled_dot_product_attention. On the CPU, LibTorch 2.11
// runs its fused flash-style kernel for unmasked causal calls and its math path (scores
// materialised, as eager) when a mask is given; on CUDA it picks among flash, memory-efficient,
// cuDNN and math. Grouped-query heads use SDPA's enable_gqa; packed rows (segment ids) pass an
// explicit block-diagonal causal mask.
//
//   model->SetAttention(plugins::SdpaCausalAttention);
#pragma once

#include <ATen/core/Tensor.h>

#include "core/model/attention.h"

namespace memsweep::plugins {

at::Tensor SdpaCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const model::AttentionInputs& inputs);

}  // namespace memsweep::plugins
