#include "lora_linear.h"

#include <ATen/ATen.h>
#include "memsweep/autocast.h"

namespace memsweep::plugins::adapter {

at::Tensor FrozenLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  const bool autocast = memsweep::AutocastEnabled(x.device().type());
  if (autocast || x.scalar_type() == weight.scalar_type()) return at::linear(x, weight, bias);
  return at::linear(x.to(weight.scalar_type()), weight, bias).to(x.scalar_type());
}

model::LinearFn LoraForward(LoraFactors f, model::LinearFn frozen) {
  return [f = std::move(f), frozen = std::move(frozen)](const at::Tensor& x, const at::Tensor& weight,
                                                       const at::Tensor& bias) {
    const at::Tensor base = frozen(x, weight, bias);
    at::Tensor input = f.dropout > 0.0 ? at::dropout(x, f.dropout, /*train=*/true) : x;
    const bool autocast = memsweep::AutocastEnabled(x.device().type());
    if (!autocast && input.scalar_type() != f.a.scalar_type()) {
      input = input.to(f.a.scalar_type());
    }
    const at::Tensor b = f.b_rows == f.b.size(0) ? f.b : f.b.narrow(0, f.b_offset, f.b_rows);
    at::Tensor delta = at::linear(at::linear(input, f.a), b);
    if (f.scaling != 1.0) delta = delta * f.scaling;
    return base + delta.to(base.scalar_type());
  };
}

}  // namespace memsweep::plugins::adapter
