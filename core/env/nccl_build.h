// Whether this build has NCCL for multi-rank CUDA runs: c10d's ProcessGroupNCCL is compiled in
// only where the wheel's nccl.h was found (core/cmake/MemsweepTorch.cmake). A build fact, like
// CUDA's, so that configuration checks need not reach into the communicators (core/comm/).
#pragma once

namespace memsweep::env {

bool NcclBuiltIn();

}  // namespace memsweep::env
