// The op-by-op AdamW update (memsweep/adamw_update.h) in slices: what AdamWUpdate runs where its
// fused CPU pass does not apply (CUDA tensors, other dtypes, strided tensors). One op at a time
// over a whole parameter would need a temporary as large as it (the denominator √v/√b2 + eps):
// 1 GiB in fp32 for a 128256 × 2048 embedding, which on a 24 GB card decides whether a run fits.
// Slices of at most kCompositeChunkElements elements bound it at 64 MiB in fp32. Each element
// sees the same ops in the same order, so slicing changes no bit of the result (tested).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "memsweep/adamw_update.h"

namespace memsweep {

inline constexpr int64_t kCompositeChunkElements = int64_t{1} << 24;

// AdamWUpdate's op-by-op form, over slices of at most chunk_elements elements (of the flat view
// when all four tensors are contiguous, else whole rows along dim 0; a row larger than
// chunk_elements is one slice).
void CompositeAdamWUpdate(const at::Tensor& p, const at::Tensor& grad, const at::Tensor& exp_avg,
                          const at::Tensor& exp_avg_sq, const AdamWHyperparameters& h,
                          int64_t step, int64_t chunk_elements);

}  // namespace memsweep
