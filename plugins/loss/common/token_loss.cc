#include "token_loss.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>

#include "memsweep/batch.h"

namespace memsweep::plugins::loss {

bool UpcastsLogits(const std::string& logits_dtype) {
  if (logits_dtype == "fp32") return true;
  if (logits_dtype == "compute") return false;
  throw std::invalid_argument("logits_dtype = \"" + logits_dtype +
                              "\": write \"fp32\" (upcast, as Hugging Face does) or \"compute\"");
}

at::Tensor SummedCrossEntropy(const at::Tensor& logits, const at::Tensor& targets, bool upcast) {
  const at::Tensor source = upcast ? logits.to(at::kFloat) : logits;
  return at::cross_entropy_loss(source, targets, /*weight=*/{}, at::Reduction::Sum,
                                data::kIgnoreIndex);
}

std::vector<RowRange> ChunkRows(int64_t n, int64_t chunk_rows) {
  std::vector<RowRange> chunks;
  chunk_rows = std::max<int64_t>(chunk_rows, 1);
  for (int64_t begin = 0; begin < n; begin += chunk_rows) {
    chunks.push_back({begin, std::min(n, begin + chunk_rows)});
  }
  return chunks;
}

}  // namespace memsweep::plugins::loss
