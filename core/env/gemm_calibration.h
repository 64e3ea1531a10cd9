// GEMM calibration: the achievable matrix-multiply FLOP/s of this machine for one dtype, measured
// in a fraction of a second. MFU is reported against this measured figure (docs/metrics.md).
//
//   double peak = MeasureGemmPeakFlops(at::kFloat);   // e.g. 4.1e11 on 2 AVX-512 cores
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <vector>

namespace memsweep::env {

struct GemmCalibrationOptions {
  // Square matrices of each size (2·size³ FLOPs per multiply); the best rate over all of them
  // counts. Several sizes because GEMM libraries peak at different ones: oneDNN's fp32 matmul
  // on an AMD EPYC ran 1024³ at 470 GFLOP/s and 1536³ at 413 (docs/metrics.md, "MFU").
  std::vector<int64_t> sizes = {1024, 1536, 2048};
  int repeats = 4;  // best of this many timed multiplies per size, after one warm-up
};

// Best observed FLOP/s of at::mm on size×size matrices of `dtype` on `device`, over the sizes
// in order (timed with the device synchronised around each multiply); a size whose multiply
// would take over 2 s at the best rate so far is skipped with the rest.
double MeasureGemmPeakFlops(c10::ScalarType dtype, const GemmCalibrationOptions& options = {},
                            const c10::Device& device = c10::Device(c10::kCPU));

// MeasureGemmPeakFlops, measured once per machine and kept: in this process, and in a file under
// ${XDG_CACHE_HOME:-~/.cache}/memsweep/gemm/ named after what the figure depends on — on the CPU
// the processor model, ATen's kernel level, the thread count and the GEMM paths (fp32 oneDNN; bf16 upcast) of
// env/cpu_gemm.h; on CUDA the GPU model (size 4096, 10 repeats) — and the dtype and LibTorch
// version. Later runs (each cell's worker) read the file instead of measuring again; delete the
// folder to measure afresh (a figure taken on a busy machine stays low until then).
double CachedGemmPeakFlops(c10::ScalarType dtype,
                           const c10::Device& device = c10::Device(c10::kCPU));

}  // namespace memsweep::env
