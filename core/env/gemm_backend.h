// The fp32 GEMM path under LibTorch.
//
// Debian's LibTorch sends every fp32 matrix multiply (mm, addmm, linear, bmm) to the Fortran
// BLAS symbol `sgemm_` of the system libblas.so.3. libmemsweep defines `sgemm_` itself, so the
// dynamic linker binds LibTorch's calls here first; memsweep then forwards each call either to
// oneDNN's dnnl_sgemm (default: ~90% of the machine's fp32 peak on AVX-512 CPUs) or to the
// system BLAS it shadows (whatever libblas.so.3 the alternatives system selects).
//
//   SetGemmBackend(GemmBackend::kSystemBlas);  // e.g. to compare both in one benchmark
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memsweep::env {

enum class GemmBackend : uint8_t { kOneDnn, kSystemBlas };

void SetGemmBackend(GemmBackend backend);
GemmBackend ActiveGemmBackend();
std::string GemmBackendName(GemmBackend backend);
std::optional<GemmBackend> ParseGemmBackend(std::string_view name);

// True when LibTorch's sgemm_ calls reach memsweep's shim (checked with a real at::mm).
bool GemmShimActive();
// Number of sgemm_ calls that went through the shim since the process started.
int64_t GemmShimCalls();

}  // namespace memsweep::env
