// Rotary position embedding applied in one pass: out = x·cos + rotate_half(x)·sin, with
// rotate_half(x) = cat(−x[..., D/2:], x[..., :D/2]), as a fused CPU kernel with its own backward.
//
// The composite form (mul, neg, cat, mul, add, and their backward) walks q and k some ten times
// per direction; the fused kernel reads and writes each once. It rounds exactly as the composite
// form does — every product and sum rounded to the result dtype promote(x, cos), then, in
// backward, each branch rounded to x's dtype before the two are added, as autograd does — so the
// results are bitwise those of the composite form (tests/core/model/rotary_test.cc), and it keeps
// the same tensors for backward (cos and sin, which the caller holds anyway). Inputs it does not
// handle (a CUDA tensor, an unusual dtype pair, a non-contiguous last dimension) take the
// composite form.
//
//   x: [B, H, T, D] (any strides, last dimension contiguous); cos, sin: [B, 1, T, D] contiguous.
//   at::Tensor q_rotated = ApplyRotary(q, cos, sin);
#pragma once

#include <ATen/core/Tensor.h>

namespace memsweep::model {

at::Tensor ApplyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

// The composite form, op by op (the reference the fused kernel reproduces).
at::Tensor ApplyRotaryComposite(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

}  // namespace memsweep::model
