// Tile-level arithmetic of the flash attention kernel: small dense fp32 matrices held in
// scratch buffers (row-major, column counts padded to multiples of kLanes) — a register-blocked
// matrix multiply, a vectorised exp, the online-softmax update and the backward's elementwise
// steps. The same source (flash_tile_ops_isa.inc) is compiled three times, each with its own
// instruction set and register blocking: AVX-512 (x86-64-v4), AVX2 + FMA (x86-64-v3) and the
// x86-64 baseline (SSE2). TileOpsFor picks one set at run time, so the kernel runs on the best
// ISA the CPU has although memsweep builds without -march. The loops use GCC vector types as
// wide as the ISA's registers (16, 8, 4 floats); tile rows are padded to kLanes = 16 floats, a
// multiple of each. LibTorch's at::vec::Vectorized would be scalar here: plugins are not
// compiled with LibTorch's CPU_CAPABILITY defines.
//
//   const TileOps& ops = TileOpsFor(Isa::kAuto);
//   ops.gemm_nn(m, n, k, a, lda, b, ldb, c, ldc, /*accumulate=*/true);  // c += a·b
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memsweep::plugins::flash {

struct Geometry;  // flash_geometry.h
struct Sequence;  // flash_varlen.h

constexpr int64_t kLanes = 16;  // tile rows are padded to multiples of this many floats

inline int64_t RoundUpToLanes(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

// The instruction sets the tile operations are compiled for. kAuto: the best one this CPU
// supports and LibTorch's own kernels use (BestIsa).
enum class Isa { kAuto, kBaseline, kAvx2, kAvx512 };

const char* IsaName(Isa isa);                           // "auto", "baseline", "avx2", "avx512"
std::optional<Isa> ParseIsa(const std::string& name);  // the inverse of IsaName
bool CpuSupports(Isa isa);                              // kAuto and kBaseline: always
// The widest ISA the CPU supports, lowered to LibTorch's CPU capability (at::get_cpu_capability,
// which ATEN_CPU_CAPABILITY=avx2 or =default lowers): the kernel follows LibTorch when the suite
// runs as on a lesser CPU (tools/test-as-avx2).
Isa BestIsa();
// Every ISA this CPU can run, widest first (for tests and benchmarks).
std::vector<Isa> SupportedIsas();

struct TileOps {
  Isa isa;  // never kAuto
  // c[m×n] (+)= a[m×k] · b[k×n]; all row-major with leading dimensions in floats. n must be a
  // multiple of kLanes (pad with zero columns).
  void (*gemm_nn)(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                  int64_t ldb, float* c, int64_t ldc, bool accumulate);
  // c[m×n] (+)= aᵀ · b with a stored [k×m] (leading dimension lda): products with a transposed
  // tile (Pᵀ·dO, dSᵀ·Q) without transposing it.
  void (*gemm_tn)(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                  int64_t ldb, float* c, int64_t ldc, bool accumulate);
  // One key tile of the forward's online softmax for `rows` query rows: s[rows×cols] holds
  // scaled scores (masked entries -inf, cols a multiple of kLanes). Updates the running row
  // maximum and sum, overwrites s with p = exp(s − new max) and rescales the output
  // accumulator o[rows×d_cols] by exp(old max − new max).
  void (*online_softmax_step)(int64_t rows, int64_t cols, float* s, int64_t lds, float* row_max,
                              float* row_sum, float* o, int64_t d_cols, int64_t ldo);
  // Backward: s := exp(s·scale − lse[i]) (the probabilities P, recomputed), masked entries
  // (-inf) become 0.
  void (*probabilities_from_scores)(int64_t rows, int64_t cols, float* s, int64_t lds,
                                    float scale, const float* lse);
  // Backward: dp := scale · p ∘ (dp − delta[i]) (dS, with the softmax scale folded in).
  void (*score_gradient)(int64_t rows, int64_t cols, const float* p, int64_t ldp, float* dp,
                         int64_t lddp, const float* delta, float scale);
  // Vectorised exp over n floats (n a multiple of kLanes), for tests: x ≤ −88 gives 0.
  void (*exp_in_place)(float* x, int64_t n);
  // The whole kernel (flash_kernel_isa.inc) compiled for this ISA, for fp32 and bf16 inputs:
  // FlashForward and FlashBackward (flash_kernel.h) call these.
  using Forward = void (*)(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           at::Tensor& out, at::Tensor& lse,
                           const std::vector<Sequence>& sequences, const Geometry& g);
  using Backward = void (*)(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& out, const at::Tensor& lse,
                            const at::Tensor& grad_out, at::Tensor& dq_partial, at::Tensor& dk,
                            at::Tensor& dv, const std::vector<Sequence>& sequences,
                            const Geometry& g);
  Forward forward_f32, forward_bf16;
  Backward backward_f32, backward_bf16;
};

// The operations for `isa` (kAuto: BestIsa()). Throws std::invalid_argument naming the ISAs
// this CPU supports when it cannot run `isa`.
const TileOps& TileOpsFor(Isa isa);

}  // namespace memsweep::plugins::flash
