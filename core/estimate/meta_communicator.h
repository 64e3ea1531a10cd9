// Shape-only communicators for the estimate of a cell of several ranks (docs/estimate.md,
// "Several ranks"): rank `rank` of `world` runs alone on the meta device, and each collective
// moves no data (meta tensors have none) but takes the buffers the real one takes on the device
// the cell stands for, so the rank's allocation stream is the real rank's:
// - the CPU: memsweep's Gloo staging (core/comm/gloo_staging.h, shared with the real process
//   group) around Gloo's own: allgather and gather stack every rank's tensor in one buffer of
//   LibTorch's allocator before copying it out; sums, broadcasts and alltoall work in place;
// - CUDA: memsweep's NCCL staging (core/comm/nccl_communicator.cc: bf16 sums widened to fp32)
//   and ProcessGroupNCCL's own stacked allgather buffer and 4-byte barrier tensor. NCCL's
//   internal buffers are not the caching allocator's and do not count, as on a GPU.
// Every call is counted as the real communicator counts it (comm_bytes, comm_calls); its time is
// zero.
#pragma once

#include <memory>

#include "core/comm/process_group.h"

namespace memsweep::estimate {

// `cuda`: the cell trains on CUDA (NCCL); else on the CPU (Gloo).
std::unique_ptr<dist::CountingCommunicator> MakeMetaCommunicator(int rank, int world, bool cuda);

}  // namespace memsweep::estimate
