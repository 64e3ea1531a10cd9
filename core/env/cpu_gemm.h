// How matrix products (aten::mm, addmm, bmm, baddbmm and their out= forms) run on the CPU, for
// bf16 (Bf16Gemm) and for fp32 (Fp32Gemm). Both install memsweep's kernels on LibTorch's CPU
// dispatch key while a run lasts; with both native, LibTorch's own kernels serve.
//
// fp32:
//   native  LibTorch's kernel: MKL's sgemm. MKL runs its AVX-512 kernels on Intel processors
//           only; on an AMD EPYC with AVX-512 it reaches ~210 GFLOP/s on two cores.
//   onednn  oneDNN's fp32 matmul (env/onednn_matmul.h): fp32 accumulation like any fp32 GEMM, in
//           oneDNN's order; ~470 GFLOP/s on the same EPYC (docs/benchmarks-history.md). Needs
//           AVX-512 (avx512bw/vl/dq) or AVX-NE-CONVERT: OnednnFp32Usable(). Products up to
//           kOnednnSmallestProduct (256³ multiply-adds) stay on MKL.
//   auto    (default) onednn on processors that are not Intel's and where oneDNN may use AVX-512
//           (OnednnFp32Preferred), native elsewhere. A rule, not a timing, for the same reason
//           as bf16's below. The bf16 upcast path multiplies through the fp32 path in force.
//
// bf16:
//   native  LibTorch's own bf16 kernels (oneDNN): fast where the CPU has AVX512-BF16 or AMX, and a
//           slow generic fallback elsewhere (measured ~10x below fp32 on an AVX2-only EPYC).
//   upcast  when every operand is bf16, memsweep's kernels widen the operands exactly to fp32,
//           multiply with the fp32 path in force, and round the result once to bf16 — the
//           numerics of oneDNN's bf16 GEMM (fp32 accumulation, one rounding) at the fp32 GEMM's
//           speed. The widened copies are transient CPU tensors and count in the memory figures.
// Products in other dtypes (float64, mixed) always go to LibTorch's CPU kernels.
//   auto    (default) native where oneDNN can use AMX, or AVX512-BF16 on a processor that is
//           not Intel's; upcast everywhere else. A rule, not a timing, so that every process on
//           a machine — each rank, each cell — takes the same path and gives the same bits.
//           Measured (docs/benchmarks-history.md): upcast beats native on AVX2 (~100x), on an
//           Intel Xeon with AVX512-BF16 without AMX (0.80x vs 0.57x of fp32); native beats it on
//           an AMD EPYC with AVX512-BF16 (3.7x vs 1.55x of MKL's fp32). The AMX rule follows
//           oneDNN's own documentation and has not been measured here.
//
// Autograd sits above the CPU dispatch key, so the backward products (mm of gradients) take the
// same path. The choice is per process; each cell's worker makes it at the start of the run.
//
//   UseBf16Gemm(ChooseBf16Gemm(Bf16GemmSetting::kAuto));
//   at::mm(a_bf16, b_bf16);   // upcast where that is faster
#pragma once

#include <string>

namespace memsweep::env {

enum class Fp32GemmSetting { kAuto, kNative, kOnednn };
enum class Fp32Gemm { kNative, kOnednn };

const char* Fp32GemmName(Fp32Gemm gemm);  // "native", "onednn"

// auto's rule: this CPU is not GenuineIntel, oneDNN's fp32 matmul is usable here, and neither
// LibTorch's CPU capability (ATEN_CPU_CAPABILITY) nor ONEDNN_MAX_CPU_ISA is set below AVX-512.
bool OnednnFp32Preferred();
// kNative / kOnednn as set (kOnednn where OnednnFp32Usable(); the config loader refuses it
// elsewhere); kAuto: kOnednn with OnednnFp32Preferred(), else kNative.
Fp32Gemm ChooseFp32Gemm(Fp32GemmSetting setting);
// Routes fp32 products through oneDNN (kOnednn) or back to LibTorch's kernels; idempotent.
void UseFp32Gemm(Fp32Gemm gemm);
Fp32Gemm ActiveFp32Gemm();

enum class Bf16GemmSetting { kAuto, kNative, kUpcast };
enum class Bf16Gemm { kNative, kUpcast };

const char* Bf16GemmName(Bf16Gemm gemm);  // "native", "upcast"

// True where oneDNN can run bf16 GEMMs on AMX here.
bool AmxBf16Usable();
// auto's rule: AmxBf16Usable(), or AVX512-BF16 on a processor that is not GenuineIntel, with
// ONEDNN_MAX_CPU_ISA not set below AVX512_CORE_BF16.
bool NativeBf16Preferred();
// kNative / kUpcast as set; kAuto: native with NativeBf16Preferred(), else upcast.
Bf16Gemm ChooseBf16Gemm(Bf16GemmSetting setting);
// Installs (upcast) or removes (native) memsweep's kernels; idempotent.
void UseBf16Gemm(Bf16Gemm gemm);
Bf16Gemm ActiveBf16Gemm();

// Puts back, when it goes, the paths that were in force when it was made: a run chooses its own
// and leaves the process as it found it (tests train many runs in one process).
class ScopedCpuGemmPaths {
 public:
  ScopedCpuGemmPaths() : fp32_(ActiveFp32Gemm()), bf16_(ActiveBf16Gemm()) {}
  ~ScopedCpuGemmPaths() {
    UseBf16Gemm(bf16_);
    UseFp32Gemm(fp32_);
  }
  ScopedCpuGemmPaths(const ScopedCpuGemmPaths&) = delete;
  ScopedCpuGemmPaths& operator=(const ScopedCpuGemmPaths&) = delete;

 private:
  Fp32Gemm fp32_;
  Bf16Gemm bf16_;
};

}  // namespace memsweep::env
