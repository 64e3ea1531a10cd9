// The forward of a LoRA-adapted linear layer:
//
//   y = base(x) + (dropout(x) · Aᵀ · Bᵀ) · scaling,   scaling = alpha / rank (alpha / √rank with
//   rsLoRA)
//
// where base(x) is the frozen layer (x · Wᵀ + b, in the weight's dtype: a base stored narrower
// than the activations is applied in its own dtype and the result cast back) and B may be a
// block of rows of a fused module's B (phi3's qkv_proj: q, k and v each use their rows).
#pragma once

#include <ATen/core/Tensor.h>

#include "memsweep/model.h"

namespace memsweep::plugins::adapter {

struct LoraFactors {
  at::Tensor a;  // [rank, in]: a trainable parameter
  at::Tensor b;  // [module_out, rank]: a trainable parameter
  // The rows of B this layer uses (a fused module's part), taken at each call: a precision
  // strategy may give the parameter new storage (set_data) after the forward is made.
  int64_t b_offset = 0, b_rows = 0;
  double scaling = 1.0;
  double dropout = 0.0;
};

// x · Wᵀ + b with W (and b) possibly in another dtype than x: applied in W's dtype, returned in
// x's (under autocast, LibTorch chooses).
at::Tensor FrozenLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);

// The layer's forward: `base` (the frozen part: FrozenLinear, or a quantised weight's product)
// with the factors' product added (model::LinearFn).
model::LinearFn LoraForward(LoraFactors factors, model::LinearFn base);

}  // namespace memsweep::plugins::adapter
