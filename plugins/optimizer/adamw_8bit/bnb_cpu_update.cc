// bitsandbytes' CPU backend (backends/cpu/ops.py: _optimizer_update_32bit_cpu and
// _optimizer_update_8bit_blockwise_cpu with optimizer_name "adam", gnorm_scale 1, max_unorm 0),
// op for op. Python frees a temporary as soon as its last reference goes (the √v of
// `√v / c2`), where a C++ full expression keeps it to the end: such expressions are split so that
// every tensor lives exactly as long as it does in Python.
#include <ATen/ATen.h>

#include <cmath>

#include "blockwise_quant.h"
#include "bnb_update.h"

namespace memsweep::plugins::optimizer {
namespace {

// p.data.copy_(p_fp32): a no-op when p_fp32 is p itself (an fp32 p).
void CpuWriteBack(const at::Tensor& p, const at::Tensor& p_fp32) {
  if (!p_fp32.is_alias_of(p)) p.copy_(p_fp32);
}

// dequantize_blockwise (CPU kernel): out = torch.empty_like(A, dtype=float32), then the codes.
at::Tensor CpuDequantize(const at::Tensor& codes, const at::Tensor& absmax, bool is_signed) {
  at::Tensor out = at::empty_like(codes, codes.options().dtype(at::kFloat));
  if (!out.is_meta()) {
    DequantizeBlockwise(codes.data_ptr<uint8_t>(), absmax.data_ptr<float>(),
                        BlockwiseCode::Get(is_signed), out.data_ptr<float>(), codes.numel());
  }
  return out;
}

// _quant_blockwise_fp32_direct: quantize_blockwise allocates absmax [blocks] then the codes,
// both are copied into the state and freed.
void CpuRequantize(const at::Tensor& values, bool is_signed, const at::Tensor& codes_out,
                const at::Tensor& absmax_out) {
  at::Tensor absmax = at::empty({BnbBlocks(values.numel())}, values.options());
  at::Tensor codes = at::empty(values.sizes(), values.options().dtype(at::kByte));
  if (!values.is_meta()) {
    QuantizeBlockwise(values.data_ptr<float>(), values.numel(), BlockwiseCode::Get(is_signed),
                      absmax.data_ptr<float>(), codes.data_ptr<uint8_t>());
  }
  codes_out.copy_(codes);
  absmax_out.copy_(absmax);
}

}  // namespace

void CpuUpdate32bit(const at::Tensor& p, const at::Tensor& g, const at::Tensor& m,
                    const at::Tensor& v, const BnbHyper& h) {
  const at::Tensor g_float = at::mul(g.to(at::kFloat), 1.0);  // g.float() * gnorm_scale
  const at::Tensor p_float = p.to(at::kFloat);
  m.mul_(h.beta1).add_(g_float, 1.0 - h.beta1);
  v.mul_(h.beta2).addcmul_(g_float, g_float, 1.0 - h.beta2);
  const double correction1 = 1.0 - std::pow(h.beta1, static_cast<double>(h.step));
  const double correction2 = std::sqrt(1.0 - std::pow(h.beta2, static_cast<double>(h.step)));
  const double step_size = -h.lr * correction2 / correction1;
  if (h.weight_decay > 0.0) p_float.mul_(1.0 - h.lr * h.weight_decay);
  // update = state1 / (state2.sqrt() + eps * correction2): √v is freed once the sum exists.
  at::Tensor denom;
  {
    const at::Tensor root = at::sqrt(v);
    denom = at::add(root, h.eps * correction2);
  }
  at::Tensor update = at::div(m, denom);
  denom.reset();
  p_float.add_(update, step_size * 1.0);  // update_scale = 1 without max_unorm
  CpuWriteBack(p, p_float);
}

void CpuUpdate8bit(const at::Tensor& p, const at::Tensor& g, const EightBitMoments& s,
                   const BnbHyper& h) {
  const at::Tensor m = CpuDequantize(s.codes1, s.absmax1, /*is_signed=*/true);
  const at::Tensor v = CpuDequantize(s.codes2, s.absmax2, /*is_signed=*/false);
  const at::Tensor grad = at::mul(g.to(at::kFloat), 1.0);  // g.float() * gnorm_scale
  const at::Tensor p_fp32 = p.to(at::kFloat);
  m.mul_(h.beta1).add_(grad, 1.0 - h.beta1);
  v.mul_(h.beta2).addcmul_(grad, grad, 1.0 - h.beta2);
  const double correction1 = 1.0 - std::pow(h.beta1, static_cast<double>(h.step));
  const double correction2 = std::sqrt(1.0 - std::pow(h.beta2, static_cast<double>(h.step)));
  // denom = (state2_fp32.sqrt() / correction2).add_(eps): √v is freed once the quotient exists.
  at::Tensor denom;
  {
    const at::Tensor root = at::sqrt(v);
    denom = at::div(root, correction2);
  }
  denom.add_(h.eps);
  if (h.weight_decay > 0.0) p_fp32.mul_(1.0 - h.lr * h.weight_decay);
  p_fp32.addcdiv_(m, denom, -h.lr / correction1);
  CpuWriteBack(p, p_fp32);
  CpuRequantize(m, /*is_signed=*/true, s.codes1, s.absmax1);
  CpuRequantize(v, /*is_signed=*/false, s.codes2, s.absmax2);
}

}  // namespace memsweep::plugins::optimizer
