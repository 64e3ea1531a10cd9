// OnednnMatmul: fp32 matrix products through oneDNN, the library LibTorch already carries for its
// bf16 CPU GEMMs. LibTorch sends fp32 mm/addmm/bmm/baddbmm to MKL, whose fast AVX-512 kernels run
// on Intel processors only: on an AMD EPYC with AVX-512 MKL's sgemm reaches ~210 GFLOP/s on two
// cores where oneDNN's fp32 matmul reaches ~470 (docs/benchmarks-history.md, "Matrix products").
// cpu_gemm.h decides when these run; this file only computes.
//
// Numerics: fp32 operands, fp32 accumulation, one fp32 result per element (oneDNN's default
// fp32 math mode; memsweep never sets a reduced one) — the same bound as any fp32 GEMM,
// |error| ≤ γ_k·Σ|a||b| for inner dimension k. The summation order is oneDNN's, so the bits
// differ from MKL's; a given shape on a given machine and thread count always gives the same
// bits (tested).
//
//   if (OnednnFp32Usable()) at::Tensor c = OnednnAddmm(bias, x, w.t(), 1.0, 1.0);
#pragma once

#include <ATen/core/Tensor.h>

namespace memsweep::env {

// True where oneDNN's matmul entry point in LibTorch accepts fp32 here: it requires AVX-512
// (avx512bw, avx512vl, avx512dq) or AVX-NE-CONVERT, with ONEDNN_MAX_CPU_ISA not set below them,
// and refuses other CPUs. Asked once per process, of LibTorch itself (a 1×1 product).
bool OnednnFp32Usable();

// Products of at most this many multiply-adds (all batches together) go to LibTorch's kernel:
// oneDNN's first product in a process costs ~26 ms and each new shape ~0.3–0.9 ms of code
// generation, while MKL computes a 256³ product in ~0.16 ms on the EPYC of benchmarks-history.md
// (where oneDNN needs 0.09). The small preset's products are all ≥ 2048·512·512.
inline constexpr int64_t kOnednnSmallestProduct = int64_t{1} << 24;  // 256³

// The products, fp32 only (callers route other dtypes elsewhere). Shapes and broadcasting as
// LibTorch's operators; empty products, k = 0 and alpha = 0 are handled as LibTorch does.
at::Tensor OnednnMm(const at::Tensor& self, const at::Tensor& mat2);
at::Tensor OnednnBmm(const at::Tensor& self, const at::Tensor& mat2);
at::Tensor OnednnAddmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                       const at::Scalar& beta, const at::Scalar& alpha);
at::Tensor OnednnBaddbmm(const at::Tensor& self, const at::Tensor& batch1,
                         const at::Tensor& batch2, const at::Scalar& beta,
                         const at::Scalar& alpha);

}  // namespace memsweep::env
