// y = x · Wᵀ over an NF4 weight (nf4.h), forward and input gradient, with no gradient for W.
// W is dequantised to the compute dtype a tile of output rows at a time on the CPU — the whole
// dequantised weight never exists, only `tile_rows` rows of it (the peak shows it) — and whole on
// CUDA, per layer and freed after the product, as bitsandbytes does for training (its
// dequantize_4bit, then a dense matmul); the backward dequantises again the same way.
//
//   at::Tensor y = Nf4Linear(x, weight, at::kBFloat16);  // [.., out] in bf16
#pragma once

#include <ATen/core/Tensor.h>

#include "nf4.h"

namespace memsweep::plugins::adapter {

// Rows per tile on the CPU: about 512 KiB of dequantised weight (at least 64 rows); every row on
// CUDA, or where a row is not a whole number of 64-value blocks.
int64_t Nf4TileRows(const Nf4Weight& weight, const at::Tensor& x, c10::ScalarType compute);

// x [.., in] → [.., out] in `compute`; x is cast to `compute` first.
at::Tensor Nf4Linear(const at::Tensor& x, const Nf4Weight& weight, c10::ScalarType compute,
                     int64_t tile_rows = 0 /* 0: Nf4TileRows */);

}  // namespace memsweep::plugins::adapter
