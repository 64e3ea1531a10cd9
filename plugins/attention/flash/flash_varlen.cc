#include "flash_varlen.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace memsweep::plugins::flash {

at::Tensor CuSeqlensFromSegmentIds(const at::Tensor& segment_ids) {
  if (segment_ids.dim() != 2) {
    throw std::invalid_argument("segment_ids must be [batch, seq_len], got " +
                                std::to_string(segment_ids.dim()) + " dimensions");
  }
  const at::Tensor ids = segment_ids.to(at::kLong).contiguous();
  const int64_t b = ids.size(0), t = ids.size(1);
  const int64_t* data = ids.data_ptr<int64_t>();
  std::vector<int64_t> offsets = {0};
  std::vector<int64_t> row_ids;
  for (int64_t row = 0; row < b; ++row) {
    row_ids.clear();
    const int64_t* r = data + row * t;
    for (int64_t i = 0; i < t; ++i) {
      if (i > 0 && r[i] == r[i - 1]) continue;
      if (i > 0) offsets.push_back(row * t + i);
      row_ids.push_back(r[i]);
    }
    offsets.push_back((row + 1) * t);
    std::sort(row_ids.begin(), row_ids.end());
    const auto repeated = std::adjacent_find(row_ids.begin(), row_ids.end());
    if (repeated != row_ids.end()) {
      throw std::invalid_argument(
          "segment id " + std::to_string(*repeated) + " occurs in two separate runs of batch row " +
          std::to_string(row) + ": each document's positions must be contiguous");
    }
  }
  if (t == 0) offsets.assign(1, 0);
  return at::tensor(offsets, at::kLong);
}

at::Tensor WholeRowCuSeqlens(int64_t batch, int64_t seq_len) {
  return at::arange(0, batch + 1, at::kLong) * seq_len;
}

std::vector<Sequence> SequencesFromCuSeqlens(const at::Tensor& cu_seqlens, int64_t batch,
                                             int64_t seq_len) {
  const at::Tensor cu = cu_seqlens.to(at::kLong).contiguous();
  const int64_t n = cu.numel();
  const int64_t* c = cu.data_ptr<int64_t>();
  if (cu.dim() != 1 || n < 1 || c[0] != 0 || c[n - 1] != batch * seq_len) {
    throw std::invalid_argument("cu_seqlens must be a 1-d int64 tensor running from 0 to batch * "
                                "seq_len = " + std::to_string(batch * seq_len));
  }
  std::vector<Sequence> sequences;
  for (int64_t i = 0; i + 1 < n; ++i) {
    const int64_t begin = c[i], end = c[i + 1];
    if (end <= begin) {
      throw std::invalid_argument("cu_seqlens must be strictly increasing (entry " +
                                  std::to_string(i + 1) + ")");
    }
    const int64_t row = begin / seq_len;
    if ((end - 1) / seq_len != row) {
      throw std::invalid_argument("cu_seqlens entry " + std::to_string(i) +
                                  ": a document crosses the end of batch row " +
                                  std::to_string(row));
    }
    sequences.push_back({row, begin - row * seq_len, end - begin});
  }
  return sequences;
}

}  // namespace memsweep::plugins::flash
