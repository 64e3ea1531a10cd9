#include "fused_kernels.h"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <torch/autograd.h>

namespace memsweep::plugins::kernels {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor InDtype(const at::Tensor& t, c10::ScalarType dtype) {
  return t.scalar_type() == dtype ? t : t.to(dtype);
}

// Each backward below applies the derivative formulas autograd would apply to the composition
// (LibTorch's derivatives.yaml: mul, rsqrt, mean, pow, silu), in the same order and dtypes, so
// that the gradients are those of the unfused model; only what they read is recomputed.
class RmsNormFunction : public torch::autograd::Function<RmsNormFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            double eps) {
    const at::Tensor x32 = InDtype(x, at::kFloat);
    const at::Tensor rstd = at::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps);
    ctx->save_for_backward({x, weight, rstd});
    return weight * (x32 * rstd).to(x.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& rstd = saved[2];
    const at::Tensor& grad_y = grads[0];
    const at::Tensor x32 = InDtype(x, at::kFloat);
    const at::Tensor normed = (x32 * rstd).to(x.scalar_type());
    at::Tensor grad_weight;
    if (ctx->needs_input_grad(1)) {
      grad_weight = at::sum_to(InDtype(grad_y * normed, weight.scalar_type()), weight.sizes());
    }
    // y = weight * normed; normed = (x32 * rstd).to(dtype)
    const at::Tensor grad_normed32 = InDtype(grad_y * weight, x.scalar_type()).to(at::kFloat);
    const at::Tensor grad_x_direct = grad_normed32 * rstd;
    const at::Tensor grad_rstd = at::sum_to(grad_normed32 * x32, rstd.sizes());
    // rstd = rsqrt(mean(x32²) + eps)
    const at::Tensor grad_mean = -0.5 * grad_rstd * rstd.pow(3);
    const at::Tensor grad_squares = grad_mean.expand(x32.sizes()).div(x32.size(-1));
    const at::Tensor grad_x_norm = grad_squares * (2 * x32);
    const at::Tensor grad_x = InDtype(grad_x_direct + grad_x_norm, x.scalar_type());
    return {grad_x, grad_weight, at::Tensor()};
  }
};

class SwiGluFunction : public torch::autograd::Function<SwiGluFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate, const at::Tensor& up) {
    ctx->save_for_backward({gate, up});
    return at::silu(gate) * up;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& gate = saved[0];
    const at::Tensor& up = saved[1];
    const at::Tensor& grad = grads[0];
    at::Tensor grad_gate, grad_up;
    if (ctx->needs_input_grad(1)) grad_up = InDtype(grad * at::silu(gate), up.scalar_type());
    if (ctx->needs_input_grad(0)) {
      grad_gate = at::silu_backward(InDtype(grad * up, gate.scalar_type()), gate);
    }
    return {grad_gate, grad_up};
  }
};

}  // namespace

at::Tensor FusedRmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  return RmsNormFunction::apply(x, weight, eps);
}

at::Tensor FusedSwiGlu(const at::Tensor& gate, const at::Tensor& up) {
  return SwiGluFunction::apply(gate, up);
}

}  // namespace memsweep::plugins::kernels
