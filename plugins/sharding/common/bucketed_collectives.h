// Collectives the ZeRO plugins build from the SDK's Communicator, in buckets of a bounded number
// of elements (DeepSpeed's reduce_bucket_size is a count of elements, too).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "memsweep/collectives.h"
#include "flat_partition.h"

namespace memsweep::sharding {

// All-reduce (sum) of a contiguous 1-D tensor in place, bucket by bucket.
void AllReduceInBuckets(Communicator& comm, at::Tensor& flat, int64_t bucket);

// Every rank's partition of `flat` from its owner, in place (one broadcast per owner: unlike
// Gloo's allgather it needs no N·P staging buffer).
void GatherPartitions(Communicator& comm, at::Tensor& flat, const FlatPartition& layout);

// Global L2 norm of a gradient partitioned over the ranks (each passes its own partition). The
// squares are summed in fp64, a chunk at a time (no fp64 copy of the whole partition).
double PartitionedNorm(Communicator& comm, const at::Tensor& owned);

// The factor that brings a gradient's global norm to at most max_norm, as the host's
// ClipGradNorm applies it (1 when no clipping is needed).
double ClipScale(double norm, double max_norm);

}  // namespace memsweep::sharding
