// Kernels: how the model computes its RMSNorm layers and its SwiGLU activation, as the kernels
// slot sets them. An empty function means the model's own composition of ATen operations:
//
//   rms_norm(x, weight, eps) = weight * (x32 * rsqrt(mean(x32², -1) + eps)).to(x.dtype)
//                              with x32 = x in fp32 (Hugging Face's LlamaRMSNorm)
//   swiglu(gate, up)         = silu(gate) * up  (gate, up: the gate and up projections' outputs)
//
// A kernels strategy may compute the same values another way — a custom autograd function that
// keeps fewer tensors for backward and recomputes the rest — as long as the values and their
// gradients with respect to every input are those of the composition above.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>

namespace memsweep::model {

// x: [..., hidden] in the compute dtype; weight: [hidden]; returns x's shape.
using RmsNormFn =
    std::function<at::Tensor(const at::Tensor& x, const at::Tensor& weight, double eps)>;
// gate, up: [..., intermediate]; returns silu(gate) * up, their shape.
using SwiGluFn = std::function<at::Tensor(const at::Tensor& gate, const at::Tensor& up)>;

struct Kernels {
  RmsNormFn rms_norm;  // every RMSNorm of the model: each block's two and the final one
  SwiGluFn swiglu;     // each block's MLP activation
};

}  // namespace memsweep::model
