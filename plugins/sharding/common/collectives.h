// Collectives the ZeRO plugins build from the SDK's Communicator, in buckets of a bounded number
// of elements (DeepSpeed's reduce_bucket_size is a count of elements, too).
#pragma once

#include <ATen/ATen.h>

#include <cmath>

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

// Reduce-scatter of a full flat gradient: adds the sum over ranks of partition `rank` into
// `owned` (P elements). Gloo in LibTorch 1.13 has no reduce_scatter (PLATFORM.md): each bucket
// is one AllToAll — chunk r of the input is this rank's contribution to rank r's partition — and
// a local sum over the N chunks received. A bucket of B elements covers B/N of each partition.
inline void ReduceScatterInBuckets(Communicator& comm, const at::Tensor& full,
                                   at::Tensor& owned, const FlatPartition& layout,
                                   int64_t bucket) {
  const int world = layout.world_size;
  const int64_t step = BucketElements(std::max<int64_t>(1, bucket / world), layout.partition);
  for (int64_t begin = 0; begin < layout.partition; begin += step) {
    const int64_t length = std::min(step, layout.partition - begin);
    std::vector<at::Tensor> chunks;
    for (int r = 0; r < world; ++r) chunks.push_back(full.narrow(0, layout.Begin(r) + begin, length));
    at::Tensor input = at::cat(chunks);
    at::Tensor output = at::empty_like(input);
    comm.AllToAll(output, input);
    owned.narrow(0, begin, length).add_(output.view({world, length}).sum(0));
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

// Global L2 norm of a gradient partitioned over the ranks (each passes its own partition).
inline double PartitionedNorm(Communicator& comm, const at::Tensor& owned) {
  at::Tensor squares = owned.to(at::kDouble).pow(2).sum().reshape({1});
  comm.AllReduceSum(squares);
  return std::sqrt(squares.item<double>());
}

// Scales the gradient so that its global norm is at most max_norm, as the host's ClipGradNorm.
inline void ClipByNorm(at::Tensor& grad, double norm, double max_norm) {
  if (max_norm > 0 && norm > max_norm) grad.mul_(max_norm / (norm + 1e-6));
}

}  // namespace memsweep::sharding
