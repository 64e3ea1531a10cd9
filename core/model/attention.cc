#include "core/model/attention.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

namespace memsweep::model {

at::Tensor RepeatKvHeads(const at::Tensor& kv, int64_t num_query_heads) {
  const int64_t kv_heads = kv.size(1);
  if (kv_heads == num_query_heads) return kv;
  const int64_t repeats = num_query_heads / kv_heads;
  const int64_t b = kv.size(0), t = kv.size(2), d = kv.size(3);
  return kv.unsqueeze(2).expand({b, kv_heads, repeats, t, d}).reshape({b, num_query_heads, t, d});
}

at::Tensor EagerCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const int64_t heads = q.size(1), t = q.size(2), d = q.size(3);
  const at::Tensor keys = RepeatKvHeads(k, heads);
  const at::Tensor values = RepeatKvHeads(v, heads);
  at::Tensor scores = at::matmul(q, keys.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(d)));
  const at::Tensor future = at::ones({t, t}, q.options().dtype(at::kBool)).triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  // Softmax in at least fp32, whatever the input precision.
  const auto softmax_dtype = q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor probs = at::softmax(scores, -1, softmax_dtype).to(v.scalar_type());
  return at::matmul(probs, values);
}

}  // namespace memsweep::model
