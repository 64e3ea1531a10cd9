// What the loss plugins share: the logits' dtype parameter, the summed next-token
// cross-entropy of a block of logits, and the token chunks the chunked and fused losses walk.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

namespace memsweep::plugins::loss {

// `logits_dtype` as written in an experiment: "fp32" (upcast before the cross-entropy, as
// Hugging Face's ForCausalLMLoss does) or "compute" (the compute dtype the head produced).
// Throws std::invalid_argument naming the accepted values.
bool UpcastsLogits(const std::string& logits_dtype);

// Sum over positions with target != kIgnoreIndex of -log softmax(logits)[target]: logits [N, V]
// (upcast to fp32 first when `upcast`), targets [N]. A scalar of the logits' (upcast) dtype.
at::Tensor SummedCrossEntropy(const at::Tensor& logits, const at::Tensor& targets, bool upcast);

// Token rows [begin, end) of each chunk of n rows: `chunk_rows` rows each (the last one fewer).
struct RowRange {
  int64_t begin = 0, end = 0;
};
std::vector<RowRange> ChunkRows(int64_t n, int64_t chunk_rows);

}  // namespace memsweep::plugins::loss
