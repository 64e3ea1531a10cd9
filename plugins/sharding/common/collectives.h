// Collectives the ZeRO plugins build from the SDK's Communicator, in buckets of a bounded number
// of elements (DeepSpeed's reduce_bucket_size is a count of elements, too).
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "memsweep/collectives.h"
#include "flat_partition.h"

namespace memsweep::sharding {

// All-reduce (sum) of a contiguous 1-D tensor in place, bucket by bucket.
inline void AllReduceInBuckets(Communicator& comm, at::Tensor& flat, int64_t bucket) {
  const int64_t n = flat.numel();
  const int64_t step = BucketElements(bucket, n);
  for (int64_t begin = 0; begin < n; begin += step) {
    at::Tensor slice = flat.narrow(0, begin, std::min(step, n - begin));
    comm.AllReduceSum(slice);
  }
}

// Every rank's partition of `flat` from its owner, in place (one broadcast per owner: unlike
// Gloo's allgather it needs no N·P staging buffer).
inline void GatherPartitions(Communicator& comm, at::Tensor& flat, const FlatPartition& layout) {
  for (int r = 0; r < layout.world_size; ++r) {
    at::Tensor slice = flat.narrow(0, layout.Begin(r), layout.partition);
    comm.Broadcast(slice, r);
  }
}

// Global L2 norm of a gradient partitioned over the ranks (each passes its own partition). The
// squares are summed in fp64, a chunk at a time (no fp64 copy of the whole partition).
inline double PartitionedNorm(Communicator& comm, const at::Tensor& owned) {
  constexpr int64_t kChunk = int64_t{1} << 16;
  at::Tensor squares = at::zeros({1}, owned.options().dtype(at::kDouble));
  for (int64_t begin = 0; begin < owned.numel(); begin += kChunk) {
    const at::Tensor chunk = owned.narrow(0, begin, std::min(kChunk, owned.numel() - begin));
    squares.add_(chunk.to(at::kDouble).pow_(2).sum());
  }
  comm.AllReduceSum(squares);
  return std::sqrt(squares.item<double>());
}

// The factor that brings a gradient's global norm to at most max_norm, as the host's
// ClipGradNorm applies it (1 when no clipping is needed).
inline double ClipScale(double norm, double max_norm) {
  return max_norm > 0 && norm > max_norm ? max_norm / (norm + 1e-6) : 1.0;
}

}  // namespace memsweep::sharding
