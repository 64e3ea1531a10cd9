#include "bucketed_collectives.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace memsweep::sharding {

void AllReduceInBuckets(Communicator& comm, at::Tensor& flat, int64_t bucket) {
  const int64_t n = flat.numel();
  const int64_t step = BucketElements(bucket, n);
  for (int64_t begin = 0; begin < n; begin += step) {
    at::Tensor slice = flat.narrow(0, begin, std::min(step, n - begin));
    comm.AllReduceSum(slice);
  }
}

void GatherPartitions(Communicator& comm, at::Tensor& flat, const FlatPartition& layout) {
  for (int r = 0; r < layout.world_size; ++r) {
    at::Tensor slice = flat.narrow(0, layout.Begin(r), layout.partition);
    comm.Broadcast(slice, r);
  }
}

double PartitionedNorm(Communicator& comm, const at::Tensor& owned) {
  constexpr int64_t kChunk = int64_t{1} << 16;
  at::Tensor squares = at::zeros({1}, owned.options().dtype(at::kDouble));
  for (int64_t begin = 0; begin < owned.numel(); begin += kChunk) {
    const at::Tensor chunk = owned.narrow(0, begin, std::min(kChunk, owned.numel() - begin));
    squares.add_(chunk.to(at::kDouble).pow_(2).sum());
  }
  comm.AllReduceSum(squares);
  // An estimate's gradients have no values (the meta device): the sum's tensors are allocated,
  // the norm is NaN, and the clipping scale (ClipScale) stays 1, which allocates nothing either.
  if (squares.is_meta()) return std::numeric_limits<double>::quiet_NaN();
  return std::sqrt(squares.item<double>());
}

double ClipScale(double norm, double max_norm) {
  return max_norm > 0 && norm > max_norm ? max_norm / (norm + 1e-6) : 1.0;
}

}  // namespace memsweep::sharding
