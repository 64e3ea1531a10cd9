#include "flash_tile_ops.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <c10/util/BFloat16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "flash_geometry.h"
#include "flash_varlen.h"

// Each ISA's block holds the tile operations and the whole kernel (flash_kernel_isa.inc), so the
// kernel's own loops are compiled for the ISA too. Vector-typed helpers are always inlined into
// the ISA's functions and take vectors by
// reference, so the ABI of a vector argument never matters.
#pragma GCC diagnostic ignored "-Wpsabi"

#define FLASH_INLINE inline __attribute__((always_inline))

namespace memsweep::plugins::flash {

// Register blocks: kRows × kVecs accumulator registers, leaving room for the kVecs loaded
// vectors of b and one broadcast of a.
// AVX-512 (32 zmm of 16 floats): 4 × 4 = 16 accumulators, a 4 × 64 block.
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
namespace avx512 {
constexpr Isa kIsa = Isa::kAvx512;
constexpr int kVecLanes = 16, kRows = 4, kVecs = 4;
#include "flash_tile_ops_isa.inc"
#include "flash_kernel_isa.inc"
constexpr TileOps kOps = {kIsa,          GemmNN,          GemmTN,     OnlineSoftmaxStep,
                          ProbabilitiesFromScores, ScoreGradient, ExpInPlace, ForwardF32,
                          ForwardBf16,   BackwardF32,     BackwardBf16};
}  // namespace avx512
#pragma GCC pop_options

// AVX2 (16 ymm of 8 floats): 6 × 2 = 12 accumulators, the classic 6 × 16 block.
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
namespace avx2 {
constexpr Isa kIsa = Isa::kAvx2;
constexpr int kVecLanes = 8, kRows = 6, kVecs = 2;
#include "flash_tile_ops_isa.inc"
#include "flash_kernel_isa.inc"
constexpr TileOps kOps = {kIsa,          GemmNN,          GemmTN,     OnlineSoftmaxStep,
                          ProbabilitiesFromScores, ScoreGradient, ExpInPlace, ForwardF32,
                          ForwardBf16,   BackwardF32,     BackwardBf16};
}  // namespace avx2
#pragma GCC pop_options

// Baseline x86-64 (16 xmm of 4 floats): 2 × 4 = 8 accumulators, a 2 × 16 block.
namespace baseline {
constexpr Isa kIsa = Isa::kBaseline;
constexpr int kVecLanes = 4, kRows = 2, kVecs = 4;
#include "flash_tile_ops_isa.inc"
#include "flash_kernel_isa.inc"
constexpr TileOps kOps = {kIsa,          GemmNN,          GemmTN,     OnlineSoftmaxStep,
                          ProbabilitiesFromScores, ScoreGradient, ExpInPlace, ForwardF32,
                          ForwardBf16,   BackwardF32,     BackwardBf16};
}  // namespace baseline

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAuto: return "auto";
    case Isa::kBaseline: return "baseline";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

std::optional<Isa> ParseIsa(const std::string& name) {
  for (Isa isa : {Isa::kAuto, Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    if (name == IsaName(isa)) return isa;
  }
  return std::nullopt;
}

// The x86-64-v3 and -v4 levels the copies are compiled for, by the features both GCC and clang
// can test (clang 14 knows no level names, nor f16c, lzcnt or movbe: every CPU with AVX2, FMA,
// BMI1 and BMI2 has those three too).
bool CpuSupports(Isa isa) {
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  switch (isa) {
    case Isa::kAvx512:
      return v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
    case Isa::kAvx2: return v3;
    default: return true;
  }
}

Isa BestIsa() {
  // LibTorch names its level "AVX512", "AVX2" or "DEFAULT" (lowered by ATEN_CPU_CAPABILITY).
  const std::string aten = at::get_cpu_capability();
  if (aten == "AVX512" && CpuSupports(Isa::kAvx512)) return Isa::kAvx512;
  if ((aten == "AVX512" || aten == "AVX2") && CpuSupports(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kBaseline;
}

std::vector<Isa> SupportedIsas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kBaseline}) {
    if (CpuSupports(isa)) isas.push_back(isa);
  }
  return isas;
}

const TileOps& TileOpsFor(Isa isa) {
  if (isa == Isa::kAuto) isa = BestIsa();
  if (!CpuSupports(isa)) {
    std::string supported;
    for (Isa s : SupportedIsas()) supported += std::string(supported.empty() ? "" : ", ") + IsaName(s);
    throw std::invalid_argument(std::string("isa = \"") + IsaName(isa) +
                                "\" needs a CPU with that instruction set; this CPU runs: " +
                                supported + " (or \"auto\")");
  }
  switch (isa) {
    case Isa::kAvx512: return avx512::kOps;
    case Isa::kAvx2: return avx2::kOps;
    default: return baseline::kOps;
  }
}

}  // namespace memsweep::plugins::flash
