// NcclCommunicator: the Communicator (memsweep/collectives.h) of a multi-rank run on CUDA, one
// GPU per rank (cuda:LOCAL_RANK), over c10d's ProcessGroupNCCL on the run's TCPStore.
//
// What strategies see is the same as with Gloo on the CPU:
// - CPU tensors are accepted: they are staged through the rank's GPU (NCCL moves device memory
//   only), so the host's own small collectives (loss and GEMM-rate sums) work unchanged;
// - bf16 sums are taken in fp32 and rounded once (the SDK's promise; NCCL's native bf16 sum
//   rounds at every hop);
// - every call is timed to completion: the rank's stream is synchronised after each collective,
//   so comm_seconds is the collective's own time (no overlap with compute is modelled).
//
// Built only where LibTorch's NCCL headers are found (nccl.h from the wheel's nvidia-nccl
// package): env::NcclBuiltIn() (core/env/nccl_build.h) says whether this build has it.
#pragma once

#include <c10/core/Device.h>
#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <memory>

#include "core/comm/process_group.h"

namespace c10d {
class Store;
}

namespace memsweep::dist {

// Throws std::runtime_error in a build without NCCL.
std::unique_ptr<CountingCommunicator> MakeNcclCommunicator(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size, c10::Device device,
    std::chrono::milliseconds timeout);

}  // namespace memsweep::dist
