#include "core/model/rotary.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <torch/autograd.h>

#include "memsweep/compute_device.h"

// Every product and sum is rounded on its own, as the composite form's separate ops round them:
// no fused multiply-add may merge them.
#pragma GCC optimize("fp-contract=off")

namespace memsweep::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Arithmetic type of a storage type (ATen's opmath): float for float, bf16 and half.
template <typename T> struct Math { using type = float; };
template <> struct Math<double> { using type = double; };

// Rounds a value computed in the math type to the storage type T and back.
template <typename T>
inline typename Math<T>::type Round(typename Math<T>::type v) {
  return static_cast<typename Math<T>::type>(static_cast<T>(v));
}

// Rows of D elements: x and out indexed [b, h, t] by their strides, cos and sin [b, t].
struct Layout {
  int64_t batch, heads, seq, dim;
  int64_t xb, xh, xt;  // strides of x (elements)
  int64_t ob, oh, ot;  // strides of the output
};

Layout LayoutOf(const at::Tensor& x, const at::Tensor& out) {
  return {x.size(0),   x.size(1),   x.size(2),   x.size(3),  x.stride(0), x.stride(1),
          x.stride(2), out.stride(0), out.stride(1), out.stride(2)};
}

// Calls row(table_offset, in_offset, out_offset) for every [b, h, t] row of D elements, rows of
// one (b, t) on one thread: the tables' row is (b, t), the input's and output's by their strides.
template <typename RowFn>
void ForEachRow(const Layout& l, const RowFn& row) {
  at::parallel_for(0, l.batch * l.seq, 1, [&](int64_t begin, int64_t end) {
    for (int64_t bt = begin; bt < end; ++bt) {
      const int64_t b = bt / l.seq, t = bt % l.seq;
      for (int64_t h = 0; h < l.heads; ++h) {
        row(bt * l.dim, b * l.xb + h * l.xh + t * l.xt, b * l.ob + h * l.oh + t * l.ot);
      }
    }
  });
}

// out = round(round(x·c) + round(r·s)), r = rotate_half(x).
template <typename T>
void Forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, at::Tensor& out) {
  using M = typename Math<T>::type;
  const Layout l = LayoutOf(x, out);
  const int64_t half = l.dim / 2;
  const T* xp = x.const_data_ptr<T>();
  const T* cp = cos.const_data_ptr<T>();
  const T* sp = sin.const_data_ptr<T>();
  T* op = out.data_ptr<T>();
  ForEachRow(l, [&](int64_t table, int64_t in, int64_t out_row) {
    const T *c = cp + table, *s = sp + table, *xr = xp + in;
    T* orow = op + out_row;
    for (int64_t i = 0; i < half; ++i) {  // r[i] = −x[i + half]
      const M xc = Round<T>(M(xr[i]) * M(c[i]));
      const M rs = Round<T>(-M(xr[i + half]) * M(s[i]));
      orow[i] = static_cast<T>(xc + rs);
    }
    for (int64_t i = half; i < l.dim; ++i) {  // r[i] = x[i − half]
      const M xc = Round<T>(M(xr[i]) * M(c[i]));
      const M rs = Round<T>(M(xr[i - half]) * M(s[i]));
      orow[i] = static_cast<T>(xc + rs);
    }
  });
}

// dx[i] = round_X(round_X(round_T(g[i]·c[i])) + round_X(±round_T(g[j]·s[j]))), j = i ± D/2:
// autograd rounds each branch's gradient to x's dtype X before adding the two in X.
template <typename T, typename X>
void Backward(const at::Tensor& grad, const at::Tensor& cos, const at::Tensor& sin,
              at::Tensor& dx) {
  using M = typename Math<T>::type;
  using MX = typename Math<X>::type;
  const Layout l = LayoutOf(grad, dx);
  const int64_t half = l.dim / 2;
  const T* gp = grad.const_data_ptr<T>();
  const T* cp = cos.const_data_ptr<T>();
  const T* sp = sin.const_data_ptr<T>();
  X* dp = dx.data_ptr<X>();
  ForEachRow(l, [&](int64_t table, int64_t in, int64_t out_row) {
    const T *c = cp + table, *s = sp + table, *g = gp + in;
    X* d = dp + out_row;
    for (int64_t i = 0; i < l.dim; ++i) {
      const MX direct = Round<X>(static_cast<MX>(Round<T>(M(g[i]) * M(c[i]))));
      // x[i] feeds r[i + half] (+) when i < half, r[i − half] (−) otherwise.
      const int64_t j = i < half ? i + half : i - half;
      const MX rotated = Round<X>(static_cast<MX>(Round<T>(M(g[j]) * M(s[j]))));
      d[i] = static_cast<X>(direct + (i < half ? rotated : -rotated));
    }
  });
}

template <typename F>
bool DispatchSame(c10::ScalarType t, const F& f) {
  switch (t) {
    case at::kFloat: f(float{}); return true;
    case at::kDouble: f(double{}); return true;
    case at::kBFloat16: f(c10::BFloat16{}); return true;
    case at::kHalf: f(c10::Half{}); return true;
    default: return false;
  }
}

class RotaryFunction : public torch::autograd::Function<RotaryFunction> {
 public:
  // x, cos and sin already in the result dtype; x_dtype: x's own dtype (its gradient's).
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cos,
                            const at::Tensor& sin, int64_t x_dtype) {
    at::Tensor out = at::empty_like(x);
    if (!x.is_meta()) {  // an estimate's tensors: the output's shape and bytes only
      DispatchSame(x.scalar_type(), [&](auto tag) { Forward<decltype(tag)>(x, cos, sin, out); });
    }
    ctx->save_for_backward({cos, sin});
    ctx->saved_data["x_dtype"] = x_dtype;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &cos = saved[0], &sin = saved[1];
    const auto x_dtype = static_cast<c10::ScalarType>(ctx->saved_data["x_dtype"].toInt());
    at::Tensor grad = grad_outputs[0];
    if (grad.stride(-1) != 1) grad = grad.contiguous();
    at::Tensor dx = at::empty_like(grad, grad.options().dtype(x_dtype));
    const c10::ScalarType t = grad.scalar_type();
    if (grad.is_meta()) {
      // an estimate's tensors: nothing to compute
    } else if (x_dtype == t) {
      DispatchSame(t, [&](auto tag) {
        using T = decltype(tag);
        Backward<T, T>(grad, cos, sin, dx);
      });
    } else if (t == at::kFloat && x_dtype == at::kBFloat16) {
      Backward<float, c10::BFloat16>(grad, cos, sin, dx);
    } else {
      Backward<float, c10::Half>(grad, cos, sin, dx);  // the one other pair Supported() admits
    }
    return {dx, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor RotateHalf(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// The fused kernel covers CPU tensors of shape [B, H, T, D] with a contiguous last dimension,
// tables [B, 1, T, D], and result/x dtype pairs of one dtype or (float; bf16 or half) x. An
// estimate's meta tensors standing for the CPU take it too (shapes only), so that the estimate
// allocates what the CPU run allocates, not the composite form's temporaries.
bool Supported(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
               c10::ScalarType result) {
  const bool cpu = ComputeDevice(x) == c10::DeviceType::CPU &&
                   x.device().type() == cos.device().type() &&
                   (x.is_cpu() || x.is_meta());
  if (!cpu || x.dim() != 4 || x.stride(3) != 1 ||
      x.size(3) % 2 != 0) {
    return false;
  }
  const std::vector<int64_t> table = {x.size(0), 1, x.size(2), x.size(3)};
  if (cos.sizes() != table || sin.sizes() != table || cos.scalar_type() != sin.scalar_type()) {
    return false;
  }
  const c10::ScalarType xt = x.scalar_type();
  const bool same = xt == result && (xt == at::kFloat || xt == at::kDouble ||
                                     xt == at::kBFloat16 || xt == at::kHalf);
  const bool widened = result == at::kFloat && (xt == at::kBFloat16 || xt == at::kHalf);
  return same || widened;
}

}  // namespace

at::Tensor ApplyRotaryComposite(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  return x * cos + RotateHalf(x) * sin;
}

at::Tensor ApplyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const c10::ScalarType result =
      at::promote_types(at::promote_types(x.scalar_type(), cos.scalar_type()), sin.scalar_type());
  if (!Supported(x, cos, sin, result)) return ApplyRotaryComposite(x, cos, sin);
  // Widening x (bf16 → fp32) and the tables is exact: the composite form computes in `result`.
  const at::Tensor xr = x.scalar_type() == result ? x : x.to(result);
  const at::Tensor c = cos.to(result).contiguous(), s = sin.to(result).contiguous();
  return RotaryFunction::apply(xr, c, s, static_cast<int64_t>(x.scalar_type()));
}

}  // namespace memsweep::model
