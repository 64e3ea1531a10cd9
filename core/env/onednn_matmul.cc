#include "core/env/onednn_matmul.h"

#include <ATen/ATen.h>
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/baddbmm_cpu_dispatch.h>
#include <ATen/ops/bmm_cpu_dispatch.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <c10/util/Exception.h>


// LibTorch's entry to oneDNN's matmul (aten/src/ATen/native/mkldnn/Matmul.cpp): result :=
// alpha·mat1·mat2 + beta·result for 2-D or 3-D (batched) operands of one dtype, contiguous or
// transposed in their last two dimensions (others are made contiguous first). libtorch_cpu
// exports it, but the wheel ships no header for it, so it is declared here; the signature is
// LibTorch 2.11's, and the link fails if a LibTorch without it is used.
namespace at::native {
TORCH_API void mkldnn_matmul(const at::Tensor& mat1, const at::Tensor& mat2,
                             const at::Tensor& result, float beta, float alpha);
}  // namespace at::native

namespace memsweep::env {
namespace {


void CheckFloat(const char* op, std::initializer_list<const at::Tensor*> operands) {
  for (const at::Tensor* t : operands) {
    TORCH_CHECK(t->scalar_type() == at::kFloat, "memsweep oneDNN ", op, ": fp32 operands only, got ",
                t->scalar_type());
  }
}

// result := beta·self (broadcast) + alpha·(a·b), the shape of the product, for 2-D or 3-D a, b.
at::Tensor Product(const at::Tensor* self, const at::Tensor& a, const at::Tensor& b,
                   float beta, float alpha) {
  std::vector<int64_t> shape(a.sizes().begin(), a.sizes().end());
  shape.back() = b.size(-1);
  const int64_t k = a.size(-1);
  at::Tensor result = at::empty(shape, a.options());
  if (result.numel() == 0) return result;
  const bool add = self != nullptr && beta != 0.0f;
  if (add) result.copy_(self->expand(shape));
  if (k == 0 || alpha == 0.0f) {  // nothing to multiply: beta·self, or zeros (beta 0 hides NaN)
    return add ? result.mul_(beta) : result.zero_();
  }
  at::native::mkldnn_matmul(a, b, result, add ? beta : 0.0f, alpha);
  return result;
}

bool Small(const at::Tensor& a, const at::Tensor& b) {
  int64_t macs = a.size(-1) * a.size(-2) * b.size(-1);
  if (a.dim() == 3) macs *= a.size(0);
  return macs <= kOnednnSmallestProduct;
}

}  // namespace

bool OnednnFp32Usable() {
  // LibTorch's own check decides (the CPU's flags, and ONEDNN_MAX_CPU_ISA, which oneDNN reads
  // once): one 1×1 product either runs or is refused before computing anything.
  static const bool usable = [] {
    try {
      const at::Tensor one = at::ones({1, 1});
      at::Tensor out = at::empty({1, 1});
      at::native::mkldnn_matmul(one, one, out, 0.0f, 1.0f);
      return out.item<float>() == 1.0f;
    } catch (const c10::Error&) {
      return false;
    }
  }();
  return usable;
}

at::Tensor OnednnMm(const at::Tensor& self, const at::Tensor& mat2) {
  CheckFloat("mm", {&self, &mat2});
  TORCH_CHECK(self.dim() == 2 && mat2.dim() == 2 && self.size(1) == mat2.size(0),
              "memsweep oneDNN mm: shapes ", self.sizes(), " and ", mat2.sizes());
  if (Small(self, mat2)) return at::cpu::mm(self, mat2);
  return Product(nullptr, self, mat2, 0.0f, 1.0f);
}

at::Tensor OnednnBmm(const at::Tensor& self, const at::Tensor& mat2) {
  CheckFloat("bmm", {&self, &mat2});
  TORCH_CHECK(self.dim() == 3 && mat2.dim() == 3 && self.size(0) == mat2.size(0) &&
                  self.size(2) == mat2.size(1),
              "memsweep oneDNN bmm: shapes ", self.sizes(), " and ", mat2.sizes());
  if (Small(self, mat2)) return at::cpu::bmm(self, mat2);
  return Product(nullptr, self, mat2, 0.0f, 1.0f);
}

at::Tensor OnednnAddmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                       const at::Scalar& beta, const at::Scalar& alpha) {
  CheckFloat("addmm", {&self, &mat1, &mat2});
  TORCH_CHECK(mat1.dim() == 2 && mat2.dim() == 2 && mat1.size(1) == mat2.size(0),
              "memsweep oneDNN addmm: shapes ", mat1.sizes(), " and ", mat2.sizes());
  if (Small(mat1, mat2)) return at::cpu::addmm(self, mat1, mat2, beta, alpha);
  return Product(&self, mat1, mat2, beta.to<float>(), alpha.to<float>());
}

at::Tensor OnednnBaddbmm(const at::Tensor& self, const at::Tensor& batch1,
                         const at::Tensor& batch2, const at::Scalar& beta,
                         const at::Scalar& alpha) {
  CheckFloat("baddbmm", {&self, &batch1, &batch2});
  TORCH_CHECK(batch1.dim() == 3 && batch2.dim() == 3 && batch1.size(0) == batch2.size(0) &&
                  batch1.size(2) == batch2.size(1),
              "memsweep oneDNN baddbmm: shapes ", batch1.sizes(), " and ", batch2.sizes());
  if (Small(batch1, batch2)) return at::cpu::baddbmm(self, batch1, batch2, beta, alpha);
  return Product(&self, batch1, batch2, beta.to<float>(), alpha.to<float>());
}

}  // namespace memsweep::env
