// Flash attention as an autograd operation and as the model's AttentionFn. Forward saves only
// q, k, v, the output and the per-row log-sum-exp; backward recomputes the probabilities
// (flash_kernel.h). Packed batches (AttentionInputs.segment_ids) run as variable-length
// sequences: each document attends causally to itself only, without a mask tensor.
//
//   model->SetAttention(MakeFlashAttention({/*q_tile=*/0, /*k_tile=*/0}));
//   at::Tensor out = FlashAttentionVarlen(q, k, v, cu_seqlens, tiles);  // differentiable
#pragma once

#include <ATen/core/Tensor.h>

#include "memsweep/attention.h"
#include "flash_kernel.h"

namespace memsweep::plugins::flash {

// Causal attention within each document of cu_seqlens (flash_varlen.h; undefined = one per
// row). fp32 and bf16 inputs compute in fp32 and return their own dtype; other floating types
// are computed in fp32 and cast back. Mixed dtypes are promoted to the widest.
at::Tensor FlashAttentionVarlen(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const at::Tensor& cu_seqlens, TileSizes tiles,
                                Isa isa = Isa::kAuto);

// The attention slot's function: derives cu_seqlens from inputs.segment_ids when present.
model::AttentionFn MakeFlashAttention(TileSizes tiles, Isa isa = Isa::kAuto);

}  // namespace memsweep::plugins::flash
