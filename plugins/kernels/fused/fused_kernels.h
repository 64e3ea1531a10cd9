// RMSNorm and SwiGLU as custom autograd functions that keep fewer tensors for backward than
// the compositions of ATen operations they replace (memsweep/kernels.h), and recompute the rest
// in backward — what Liger Kernel's fused RMSNorm and SwiGLU keep, with ATen operations in place
// of Triton kernels, so the same code runs on the CPU and on CUDA.
//
// Kept for backward, per element of the input (s = bytes of the compute dtype):
//   RMSNorm  composition: the input in fp32 (4 B; x itself when x is fp32) and the normalised
//                         value in the compute dtype (s B), plus one fp32 rstd per row
//            fused:       the input (s B) and one fp32 rstd per row
//   SwiGLU   composition: gate, silu(gate) and up (3·s B per intermediate element)
//            fused:       gate and up (2·s B)
// so per token and decoder layer the fused functions keep 2 × 4·hidden + s·intermediate bytes
// fewer (the final norm another 4·hidden per token), where the input is kept by nothing else.
#pragma once

#include <ATen/core/Tensor.h>

namespace memsweep::plugins::kernels {

// weight * (x32 * rsqrt(mean(x32², -1) + eps)).to(x.dtype), x32 = x in fp32; backward
// recomputes the normalised value from x and the kept rstd.
at::Tensor FusedRmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps);

// silu(gate) * up; backward recomputes silu(gate) from gate, in fp32.
at::Tensor FusedSwiGlu(const at::Tensor& gate, const at::Tensor& up);

}  // namespace memsweep::plugins::kernels
