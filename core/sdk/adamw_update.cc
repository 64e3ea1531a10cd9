#include "memsweep/adamw_update.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/utils.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/sdk/adamw_composite.h"
#include "core/sdk/adamw_kernel.h"
#include "core/sdk/meta_target.h"

namespace memsweep {
namespace {

constexpr int64_t kGrain = int64_t{1} << 15;  // elements per parallel chunk

// The fused loop's tensors: on the CPU (or on meta tensors standing for it: an estimate), fp32,
// contiguous, all of p's length.
bool Fusable(const at::Tensor& p, const at::Tensor& grad, const at::Tensor& m,
             const at::Tensor& v) {
  for (const at::Tensor* t : {&p, &grad, &m, &v}) {
    const bool cpu = t->device().is_cpu() ||
                     (t->device().is_meta() && MetaDeviceTarget() == c10::DeviceType::CPU);
    if (!cpu || t->scalar_type() != at::kFloat || !t->is_contiguous() ||
        t->numel() != p.numel()) {
      return false;
    }
  }
  return true;
}

// The update op by op on one slice (CUDA, other dtypes, strided tensors). Its temporary (the
// denominator) is as large as the slice.
void CompositeSlice(const at::Tensor& p, const at::Tensor& grad, const at::Tensor& exp_avg,
                    const at::Tensor& exp_avg_sq, const AdamWHyperparameters& h, double bias1,
                    double bias2) {
  at::Tensor param = p, m = exp_avg, v = exp_avg_sq;  // handles to the same storage
  param.mul_(1.0 - h.lr * h.weight_decay);
  m.mul_(h.beta1).add_(grad, 1.0 - h.beta1);
  v.mul_(h.beta2).addcmul_(grad, grad, 1.0 - h.beta2);
  const at::Tensor denom = v.sqrt().div_(std::sqrt(bias2)).add_(h.eps);
  param.addcdiv_(m, denom, -h.lr / bias1);
}

}  // namespace

void AdamWUpdate(const at::Tensor& p, const at::Tensor& grad, const at::Tensor& exp_avg,
                 const at::Tensor& exp_avg_sq, const AdamWHyperparameters& h, int64_t step) {
  if (!Fusable(p, grad, exp_avg, exp_avg_sq)) {
    CompositeAdamWUpdate(p, grad, exp_avg, exp_avg_sq, h, step, kCompositeChunkElements);
    return;
  }
  if (p.is_meta()) return;  // the fused loop allocates nothing, and a meta tensor has no data
  torch::NoGradGuard no_grad;
  const double bias1 = 1.0 - std::pow(h.beta1, static_cast<double>(step));
  const double bias2 = 1.0 - std::pow(h.beta2, static_cast<double>(step));
  // One pass over p, g, m, v instead of nine ops (each a pass, three writing temporaries). The
  // scalars are rounded to fp32 as LibTorch rounds a Scalar for an fp32 op; the division by
  // √bias2 is a multiplication by its reciprocal, as LibTorch's division by a scalar is.
  const adamw::Coefficients c{static_cast<float>(1.0 - h.lr * h.weight_decay),
                       static_cast<float>(h.beta1),
                       static_cast<float>(1.0 - h.beta1),
                       static_cast<float>(h.beta2),
                       static_cast<float>(1.0 - h.beta2),
                       static_cast<float>(1.0 / std::sqrt(bias2)),
                       static_cast<float>(h.eps),
                       static_cast<float>(-h.lr / bias1)};
  float* pp = p.data_ptr<float>();
  const float* gp = grad.const_data_ptr<float>();
  float* mp = exp_avg.data_ptr<float>();
  float* vp = exp_avg_sq.data_ptr<float>();
  at::parallel_for(0, p.numel(), kGrain, [=](int64_t begin, int64_t end) {
    adamw::UpdateRange(pp + begin, gp + begin, mp + begin, vp + begin, end - begin, c);
  });
}

void CompositeAdamWUpdate(const at::Tensor& p, const at::Tensor& grad, const at::Tensor& exp_avg,
                          const at::Tensor& exp_avg_sq, const AdamWHyperparameters& h,
                          int64_t step, int64_t chunk_elements) {
  torch::NoGradGuard no_grad;
  const double bias1 = 1.0 - std::pow(h.beta1, static_cast<double>(step));
  const double bias2 = 1.0 - std::pow(h.beta2, static_cast<double>(step));
  const int64_t n = p.numel();
  if (n <= chunk_elements || p.dim() == 0) {
    CompositeSlice(p, grad, exp_avg, exp_avg_sq, h, bias1, bias2);
    return;
  }
  const std::array<const at::Tensor*, 4> all = {&p, &grad, &exp_avg, &exp_avg_sq};
  const bool contiguous = std::all_of(all.begin(), all.end(),
                                      [](const at::Tensor* t) { return t->is_contiguous(); });
  // Slices of the flat view when every tensor is contiguous, else runs of rows along dim 0.
  const int64_t row = contiguous ? 1 : n / p.size(0);
  const int64_t length = contiguous ? n : p.size(0);
  const int64_t per_slice = std::max<int64_t>(1, chunk_elements / std::max<int64_t>(row, 1));
  auto slice = [&](const at::Tensor& t, int64_t start, int64_t count) {
    return contiguous ? t.view({-1}).narrow(0, start, count) : t.narrow(0, start, count);
  };
  for (int64_t start = 0; start < length; start += per_slice) {
    const int64_t count = std::min(per_slice, length - start);
    CompositeSlice(slice(p, start, count), slice(grad, start, count),
                   slice(exp_avg, start, count), slice(exp_avg_sq, start, count), h, bias1, bias2);
  }
}

}  // namespace memsweep
