// The cuBLAS workspaces a CUDA run takes from the caching allocator, in an estimate that stands
// for CUDA (docs/estimate.md, "What differs on CUDA").
//
// LibTorch 2.11 gives every (cuBLAS handle, stream) pair a workspace the first time a GEMM runs
// on it (ATen's CublasHandlePool.cpp, getNewWorkspace) and keeps it for the process's life;
// cuBLASLt shares it (TORCH_CUBLASLT_UNIFIED_WORKSPACE, on by default). Handles are per thread,
// and a training step runs its GEMMs on two threads: the forward on the caller's, the backward
// (checkpointed layers' recomputation included) on autograd's thread for the GPU. A CUDA run
// therefore holds two workspaces from its first backward GEMM on; on the meta device both run on
// one thread and no workspace exists, so ScopedBlasWorkspaces allocates them where the CUDA run
// would: at the first GEMM outside and inside the backward stage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memsweep::estimate {

// The workspace LibTorch 2.11 allocates per (handle, stream) on a GPU of compute capability
// `compute_capability` (86 = sm_86): CUBLAS_WORKSPACE_CONFIG's sum of ":SIZE:COUNT" KiB when
// `cublas_workspace_config` is set (as the variable's value), else 32 MiB on sm_90 (Hopper),
// else 8 MiB + 128 KiB (":4096:2:16:8").
int64_t CublasWorkspaceBytes(int compute_capability,
                             const std::optional<std::string>& cublas_workspace_config);

// The same for this process: CUBLAS_WORKSPACE_CONFIG read from the environment.
int64_t CublasWorkspaceBytes(int compute_capability);

// "sm_90", "9.0" or "90" as 90; nullopt for anything else (or outside 30..199).
std::optional<int> ParseComputeCapability(std::string_view text);

// While alive, meta GEMMs allocate the workspaces (each `bytes`, from the meta device's tracking
// allocator) a CUDA run's GEMMs would, and it holds them until destroyed. One at a time.
class ScopedBlasWorkspaces {
 public:
  explicit ScopedBlasWorkspaces(int64_t bytes);
  ~ScopedBlasWorkspaces();
  ScopedBlasWorkspaces(const ScopedBlasWorkspaces&) = delete;
  ScopedBlasWorkspaces& operator=(const ScopedBlasWorkspaces&) = delete;

  // How many workspaces the run has taken so far (0, 1 or 2).
  int Taken() const;
};

}  // namespace memsweep::estimate
