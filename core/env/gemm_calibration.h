// GEMM calibration: the achievable matrix-multiply FLOP/s of this machine for one dtype, measured
// in a fraction of a second. MFU is reported against this measured figure (docs/metrics.md).
//
//   double peak = MeasureGemmPeakFlops(at::kFloat);   // e.g. 4.1e11 on 2 AVX-512 cores
//   GemmCalibration kept = CachedGemmCalibration(at::kBFloat16);  // with when and under what load
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
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

// A kept calibration: the figure and the circumstances of its measurement, so that a figure
// taken on a busy machine can be recognised. Files written before these were recorded hold
// the figure alone (the other fields then stay unknown).
struct GemmCalibration {
  double flops = 0.0;
  std::string measured_at;      // UTC, "2026-12-01T09:14:03Z"; "" unknown
  double load_average = -1.0;   // the 1-minute load average (/proc/loadavg) at the start; -1 unknown
  // Cores' worth of CPU time that other processes used while it measured (the whole machine's
  // busy time from /proc/stat less this process's own, over the wall time); -1 unknown.
  double other_busy_cores = -1.0;
  int cores = 0;                // online cores at the time; 0 unknown
  int threads = 0;              // intra-op threads it measured with; 0 unknown
  std::string file;             // the cache file it is kept in ("" when none)
  std::string dtype;            // "Float", "BFloat16", ... (c10::toString); "" unknown

  // "452.0 GFLOP/s, measured 2026-12-01T09:14:03Z with 2 threads on 2 cores; load average
  // 1.95, other processes busy on 1.6 cores"; unknown parts left out.
  std::string Describe() const;
  // Whether other processes were busy enough while it measured to make the figure low: they
  // used a quarter of the cores or more, or (when that is unknown) the load average was at
  // least half the cores.
  bool TakenUnderLoad() const;
};

// The file that keeps this machine's figure for `dtype` on `device`: under
// ${XDG_CACHE_HOME:-~/.cache}/memsweep/gemm/, named after what the figure depends on — on the
// CPU the processor model, ATen's kernel level, the thread count and the GEMM paths (fp32
// oneDNN; bf16 upcast) of env/cpu_gemm.h in force now; on CUDA the GPU model — and the dtype and
// LibTorch version. "" when there is none to use (no cache folder, an unknown GPU).
std::string GemmCalibrationFile(c10::ScalarType dtype,
                                const c10::Device& device = c10::Device(c10::kCPU));

// MeasureGemmPeakFlops (on CUDA: size 4096, 10 repeats), measured once per machine and kept: in
// this process, and in GemmCalibrationFile with when and under what load it was measured. Later
// runs (each cell's worker) read the file instead of measuring again.
GemmCalibration CachedGemmCalibration(c10::ScalarType dtype,
                                      const c10::Device& device = c10::Device(c10::kCPU));
double CachedGemmPeakFlops(c10::ScalarType dtype,
                           const c10::Device& device = c10::Device(c10::kCPU));

enum class Recalibrate : uint8_t {
  kIfHigher,  // a run beat the kept figure: the new one replaces it only if it is higher
  kAlways,    // `memsweep calibrate`: the new figure replaces the kept one
};
// Measures the figure again now and keeps it (in this process and in the file) as `when` says.
// Returns the figure kept afterwards.
GemmCalibration RecalibrateGemm(c10::ScalarType dtype, Recalibrate when,
                                const c10::Device& device = c10::Device(c10::kCPU));

// Every calibration file in the cache folder (any machine key, dtype and LibTorch version), by
// file name; for `memsweep --version` and `memsweep calibrate --show`.
std::vector<GemmCalibration> KeptGemmCalibrations();

}  // namespace memsweep::env
