#include "memsweep/attention.h"

#include <ATen/ATen.h>

namespace memsweep::model {

at::Tensor RepeatKvHeads(const at::Tensor& kv, int64_t num_query_heads) {
  const int64_t kv_heads = kv.size(1);
  if (kv_heads == num_query_heads) return kv;
  const int64_t repeats = num_query_heads / kv_heads;
  const int64_t b = kv.size(0), t = kv.size(2), d = kv.size(3);
  return kv.unsqueeze(2).expand({b, kv_heads, repeats, t, d}).reshape({b, num_query_heads, t, d});
}

}  // namespace memsweep::model
