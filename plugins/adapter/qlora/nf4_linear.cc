#include "nf4_linear.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <algorithm>

#include "memsweep/compute_device.h"

namespace memsweep::plugins::adapter {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

Nf4Weight FromSaved(AutogradContext* ctx) {
  Nf4Weight q;
  q.codes = ctx->saved_data["codes"].toTensor();
  const c10::IValue& codes = ctx->saved_data["absmax_codes"];
  if (!codes.isNone()) q.absmax_codes = codes.toTensor();
  q.absmax_scales = ctx->saved_data["absmax_scales"].toTensor();
  const c10::IValue& offset = ctx->saved_data["offset"];
  if (!offset.isNone()) q.offset = offset.toTensor();
  q.shape = ctx->saved_data["shape"].toIntVector();
  return q;
}

// The frozen weight's product; its only differentiable input is x.
class Nf4Matmul : public torch::autograd::Function<Nf4Matmul> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const Nf4Weight& q,
                            c10::ScalarType compute, int64_t tile) {
    ctx->saved_data["codes"] = q.codes;
    ctx->saved_data["absmax_codes"] = q.absmax_codes;  // undefined without double quantisation
    ctx->saved_data["absmax_scales"] = q.absmax_scales;
    ctx->saved_data["offset"] = q.offset;
    ctx->saved_data["shape"] = q.shape;
    ctx->saved_data["compute"] = static_cast<int64_t>(compute);
    ctx->saved_data["tile"] = tile;
    const int64_t out = q.shape[0], in = q.shape[1];
    const at::Tensor x2 = x.reshape({-1, in}).to(compute);
    const at::Tensor absmax = DequantizeAbsmax(q);
    if (tile >= out) {
      return at::mm(x2, DequantizeNf4Rows(q, absmax, 0, out, compute).t()).view(
          [&] { auto s = x.sizes().vec(); s.back() = out; return s; }());
    }
    at::Tensor y = at::empty({x2.size(0), out}, x2.options());
    for (int64_t row = 0; row < out; row += tile) {
      const int64_t rows = std::min(tile, out - row);
      y.narrow(1, row, rows).copy_(at::mm(x2, DequantizeNf4Rows(q, absmax, row, rows, compute).t()));
    }
    auto sizes = x.sizes().vec();
    sizes.back() = out;
    return y.view(sizes);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const Nf4Weight q = FromSaved(ctx);
    const auto compute = static_cast<c10::ScalarType>(ctx->saved_data["compute"].toInt());
    const int64_t tile = ctx->saved_data["tile"].toInt();
    const int64_t out = q.shape[0], in = q.shape[1];
    const at::Tensor dy = grads[0].reshape({-1, out}).to(compute);
    const at::Tensor absmax = DequantizeAbsmax(q);
    at::Tensor dx;
    for (int64_t row = 0; row < out; row += tile) {
      const int64_t rows = std::min(tile, out - row);
      const at::Tensor w = DequantizeNf4Rows(q, absmax, row, rows, compute);
      // A contiguous slice and a plain product: every GEMM path takes it (a strided bf16
      // addmm_ fell back to LibTorch's slow native bf16 kernel on a CPU without bf16 FMA).
      const at::Tensor product = at::mm(dy.narrow(1, row, rows).contiguous(), w);
      dx = dx.defined() ? dx.add_(product) : product;
    }
    auto sizes = grads[0].sizes().vec();
    sizes.back() = in;
    return {dx.view(sizes), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

int64_t Nf4TileRows(const Nf4Weight& weight, const at::Tensor& x, c10::ScalarType compute) {
  const int64_t out = weight.shape[0], in = weight.shape[1];
  // ComputeDevice: an estimate's meta tensors tile as the device they stand for does.
  if (ComputeDevice(x) != c10::DeviceType::CPU || in % kNf4Block != 0) return out;
  const int64_t bytes_per_row = in * static_cast<int64_t>(c10::elementSize(compute));
  return std::min(out, std::max<int64_t>(64, (int64_t{1} << 19) / bytes_per_row));
}

at::Tensor Nf4Linear(const at::Tensor& x, const Nf4Weight& weight, c10::ScalarType compute,
                     int64_t tile_rows) {
  const int64_t tile = tile_rows > 0 ? tile_rows : Nf4TileRows(weight, x, compute);
  return Nf4Matmul::apply(x, weight, compute, tile);
}

}  // namespace memsweep::plugins::adapter
