// The fused flash attention kernel (FlashAttention-2 on the CPU), forward and backward, on
// q [B, H, T, D] and k, v [B, KV, T, D] (any strides with the last dimension contiguous; fp32
// or bf16, accumulated in fp32). Causal within each document of `sequences` (flash_varlen.h):
// a query tile visits only the key tiles at or before its own last row, inside its document.
// Grouped-query heads read their key/value head directly (nothing is repeated). `isa` picks the
// tile operations' instruction set (flash_tile_ops.h; kAuto: the best this CPU runs).
//
//   TileSizes tiles = ResolveTileSizes({}, head_dim);
//   FlashOutputs fwd = FlashForward(q, k, v, sequences, tiles);
//   FlashGrads g = FlashBackward(q, k, v, fwd.out, fwd.lse, grad_out, sequences, tiles);
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "flash_geometry.h"
#include "flash_tile_ops.h"
#include "flash_varlen.h"

namespace memsweep::plugins::flash {

// Largest power-of-two tiles (from 128 down to 16) whose backward working set — the fp32 tile
// buffers of one thread — fits in half of the L2 cache (sysconf; 1 MiB when unknown). Explicit
// sizes are kept as given.
TileSizes ResolveTileSizes(TileSizes requested, int64_t head_dim);
// Bytes of fp32 scratch one thread uses in backward with these tiles.
int64_t BackwardScratchBytes(TileSizes tiles, int64_t head_dim);
int64_t L2CacheBytes();

struct FlashOutputs {
  at::Tensor out;  // [B, H, T, D] in q's dtype (stored as [B, T, H, D], returned transposed)
  at::Tensor lse;  // [B, H, T] fp32: log-sum-exp of each query row's scaled scores
};

struct FlashGrads {
  at::Tensor dq, dk, dv;
};

FlashOutputs FlashForward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const std::vector<Sequence>& sequences, TileSizes tiles,
                          Isa isa = Isa::kAuto);

// FlashAttention-2's backward: P is recomputed from q, k and lse; D = rowsum(dO ∘ O);
// dS = P ∘ (dP − D). Work is split over key tiles (each owns its dK, dV rows); dQ is summed in
// one fp32 buffer per thread, added up in thread order (deterministic for a thread count).
FlashGrads FlashBackward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const at::Tensor& out, const at::Tensor& lse, const at::Tensor& grad_out,
                         const std::vector<Sequence>& sequences, TileSizes tiles,
                         Isa isa = Isa::kAuto);

}  // namespace memsweep::plugins::flash
