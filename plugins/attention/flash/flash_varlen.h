// Variable-length sequences for the flash kernel, as flash-attention's varlen API describes
// them: cumulative sequence offsets `cu_seqlens` (int64, [N + 1], starting at 0) into the
// batch's tokens flattened to B·T, one entry per document boundary. A packed batch's per-row
// segment ids become these offsets, so no [T, T] mask is ever built.
//
//   at::Tensor cu = CuSeqlensFromSegmentIds(inputs.segment_ids);   // [0, 3, 4, 8, ...]
//   std::vector<Sequence> docs = SequencesFromCuSeqlens(cu, /*batch=*/b, /*seq_len=*/t);
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace memsweep::plugins::flash {

// One document: `length` tokens of batch row `batch`, starting at position `start`.
struct Sequence {
  int64_t batch = 0;
  int64_t start = 0;
  int64_t length = 0;
};

// Offsets of the runs of equal ids in each row of segment_ids [B, T] (int64), flattened to B·T.
// Every row boundary is a document boundary. Throws std::invalid_argument when an id occurs in
// two separate runs of a row (a document must be contiguous; the eager mask would let the two
// parts attend to each other).
at::Tensor CuSeqlensFromSegmentIds(const at::Tensor& segment_ids);

// Offsets [0, T, 2T, ..., B·T]: one document per row.
at::Tensor WholeRowCuSeqlens(int64_t batch, int64_t seq_len);

// The documents of cu_seqlens; throws std::invalid_argument when the offsets are not increasing
// from 0 to B·T or a document crosses a row boundary.
std::vector<Sequence> SequencesFromCuSeqlens(const at::Tensor& cu_seqlens, int64_t batch,
                                             int64_t seq_len);

}  // namespace memsweep::plugins::flash
