// Bf16Gemm: how bf16 matrix products run on the CPU.
//
//   native  LibTorch's own bf16 kernels (oneDNN): fast where the CPU has AVX512-BF16 or AMX, and a
//           slow generic fallback elsewhere (measured ~10x below fp32 on an AVX2-only EPYC).
//   upcast  memsweep's kernels for aten::mm, addmm, bmm and baddbmm (and their out= forms),
//           registered on the CPU
//           dispatch key while active: when every operand is bf16 they widen the operands
//           exactly to fp32, multiply with LibTorch's fp32 GEMM (MKL), and round the result once
//           to bf16 — the numerics of oneDNN's bf16 GEMM (fp32 accumulation, one rounding) at
//           the fp32 GEMM's speed. Other dtypes go to LibTorch's CPU kernels unchanged. The
//           widened copies are transient CPU tensors and count in the memory figures.
//   auto    (default) native where oneDNN can use AMX (the CPU reports amx_bf16 and
//           ONEDNN_MAX_CPU_ISA does not rule it out), upcast everywhere else. A rule, not a
//           timing, so that every process on a machine — each rank, each cell — takes the same
//           path and gives the same bits. Measured (docs/benchmarks.md): upcast beats native on
//           AVX2 (~100x) and on AVX512-BF16 without AMX (0.80x vs 0.57x of fp32); the AMX rule
//           follows oneDNN's own documentation and has not been measured here.
//
// Autograd sits above the CPU dispatch key, so the backward products (mm of gradients) take the
// same path. The choice is per process; each cell's worker makes it at the start of the run.
//
//   UseBf16Gemm(ChooseBf16Gemm(Bf16GemmSetting::kAuto));
//   at::mm(a_bf16, b_bf16);   // upcast where that is faster
#pragma once

#include <string>

namespace memsweep::env {

enum class Bf16GemmSetting { kAuto, kNative, kUpcast };
enum class Bf16Gemm { kNative, kUpcast };

const char* Bf16GemmName(Bf16Gemm gemm);  // "native", "upcast"

// True where oneDNN can run bf16 GEMMs on AMX here.
bool AmxBf16Usable();
// kNative / kUpcast as set; kAuto: native with AmxBf16Usable(), else upcast.
Bf16Gemm ChooseBf16Gemm(Bf16GemmSetting setting);
// Installs (upcast) or removes (native) memsweep's kernels; idempotent.
void UseBf16Gemm(Bf16Gemm gemm);
Bf16Gemm ActiveBf16Gemm();

}  // namespace memsweep::env
