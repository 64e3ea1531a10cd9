// GpuCatalog: the one table of named NVIDIA GPUs memsweep knows, so that an experiment can ask to
// be run as if on a user's card while it actually runs on a bigger one (and, later, so that
// estimates can be quoted per card). docs/gpu-models.md has the table with every source.
//
//   [device]
//   type = "cuda"
//   emulate = "a10g"            # a name below (any case); or a capacity: emulate = "20GiB"
//   emulate_context = "600MiB"  # optional: overrides the card's context_bytes
//
// With `emulate = "<name>"` the CUDA caching allocator is capped at
//
//   UsableBytes() = total_bytes - context_bytes
//
// which is what a PyTorch/LibTorch process on that card can hand to its caching allocator:
//
// - total_bytes is the device memory the CUDA driver reports on that card: cudaMemGetInfo's total,
//   the same figure as cudaDeviceProp::totalGlobalMem, torch.cuda.get_device_properties().
//   total_memory and the "GPU 0 has a total capacity of ..." line of PyTorch's out-of-memory
//   message. It is smaller than nvidia-smi's memory.total (kept here as smi_total_bytes) by what
//   the driver reserves for itself, and it varies by some tens of MiB between driver versions.
// - context_bytes is what one process loses outside the caching allocator on that card: the CUDA
//   context with its lazily loaded kernel images (CUDA_MODULE_LOADING=LAZY, CUDA's default on
//   Linux since 12.2) and the cuBLAS/cuBLASLt/cuDNN handles' own state.
//   cuBLAS and cuBLASLt workspaces are NOT part of it: LibTorch 2.11 takes them from the caching
//   allocator (ATen's CublasHandlePool.cpp, getNewWorkspace / getNewCUDABlasLtWorkspace), so the
//   cap already counts them. The figures come from public PyTorch out-of-memory reports on each
//   card ("this process has X in use" minus "allocated by PyTorch" minus "reserved by PyTorch but
//   unallocated"); they are estimates that depend on which kernels the process has loaded, hence
//   `emulate_context`. Where no report for the card itself was found, `source` says which card's
//   figure stands in for it.
//
// Every figure's origin is in `source` (total and context) and `smi_source` (nvidia-smi total).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::env {

struct GpuModel {
  std::string name;       // key used in experiment files: "a10g" (lowercase, unique)
  std::string product;    // "NVIDIA A10G"; the driver may add a form factor ("A100-SXM4-80GB")
  int64_t total_bytes;    // device memory the CUDA driver reports on that card (cudaMemGetInfo
                          // total / torch total_memory; nvidia-smi's memory.total is larger by the
                          // driver's reserve: smi_total_bytes)
  int64_t context_bytes;  // what a PyTorch process loses outside the caching allocator on that
                          // card: CUDA context (+ lazily loaded kernels), cuBLAS/cuBLASLt and cuDNN
                          // handles/workspaces not served by the caching allocator
  std::string source;     // where total_bytes and context_bytes come from (URL / document + what
                          // it says); "estimate"/"unverified" where it is one
  int64_t smi_total_bytes;  // nvidia-smi memory.total on that card (GDDR data-center cards
                            // show about 15/16 of their DRAM here)
  std::string smi_source;   // where smi_total_bytes comes from
  int nominal_gib;          // capacity the card is sold with ("24 GB" = 24 GiB of DRAM)
  int compute_capability;   // CUDA compute capability x 10 (86 = sm_86): the cuBLAS workspace
                            // LibTorch takes per thread depends on it (estimate/blas_workspaces.h)

  int64_t UsableBytes() const { return total_bytes - context_bytes; }
};

// All known cards, ordered by nominal capacity, then by name (the order of docs/gpu-models.md).
const std::vector<GpuModel>& GpuCatalog();

// The card called `name` (ASCII case-insensitive: "A10G" finds "a10g"); nullptr if unknown.
const GpuModel* FindGpu(std::string_view name);

// The catalog's names, in catalog order (for error messages: "known: a10g, l4, ...").
std::vector<std::string> GpuNames();

}  // namespace memsweep::env
