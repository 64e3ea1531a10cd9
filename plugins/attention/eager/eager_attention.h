// Eager causal attention with grouped-query heads and optional per-document masking.
#pragma once

#include <ATen/core/Tensor.h>

#include "memsweep/attention.h"

namespace memsweep::plugins {

// softmax(q·kᵀ/√D + mask)·v; the mask hides later positions and, when inputs.segment_ids is
// defined, positions of other documents. Softmax runs in fp32 (fp64 for fp64 inputs).
at::Tensor EagerCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const model::AttentionInputs& inputs);

}  // namespace memsweep::plugins
