#include "core/estimate/meta_upcast_gemm.h"

#include <ATen/ATen.h>
#include <ATen/ops/addmm_meta_dispatch.h>
#include <ATen/ops/baddbmm_meta_dispatch.h>
#include <ATen/ops/bmm_meta_dispatch.h>
#include <ATen/ops/mm_meta_dispatch.h>
#include <torch/library.h>

#include <initializer_list>

#include "core/env/silent_warnings.h"

namespace memsweep::estimate {
namespace {

bool AllBf16(std::initializer_list<const at::Tensor*> operands) {
  for (const at::Tensor* t : operands) {
    if (t->scalar_type() != at::kBFloat16) return false;
  }
  return true;
}
at::Tensor Wide(const at::Tensor& t) { return t.to(at::kFloat); }
at::Tensor Narrow(const at::Tensor& t) { return t.to(at::kBFloat16); }

// As env/cpu_gemm.cc's kernels: Narrow(fp32 product of the widened operands).
at::Tensor Mm(const at::Tensor& self, const at::Tensor& mat2) {
  if (AllBf16({&self, &mat2})) return Narrow(at::meta::mm(Wide(self), Wide(mat2)));
  return at::meta::mm(self, mat2);
}
at::Tensor Bmm(const at::Tensor& self, const at::Tensor& mat2) {
  if (AllBf16({&self, &mat2})) return Narrow(at::meta::bmm(Wide(self), Wide(mat2)));
  return at::meta::bmm(self, mat2);
}
at::Tensor Addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                 const at::Scalar& beta, const at::Scalar& alpha) {
  if (AllBf16({&self, &mat1, &mat2})) {
    return Narrow(at::meta::addmm(Wide(self), Wide(mat1), Wide(mat2), beta, alpha));
  }
  return at::meta::addmm(self, mat1, mat2, beta, alpha);
}
at::Tensor Baddbmm(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                   const at::Scalar& beta, const at::Scalar& alpha) {
  if (AllBf16({&self, &batch1, &batch2})) {
    return Narrow(at::meta::baddbmm(Wide(self), Wide(batch1), Wide(batch2), beta, alpha));
  }
  return at::meta::baddbmm(self, batch1, batch2, beta, alpha);
}

// The out= forms: the product, then written into `out` as the CPU kernels write it.
at::Tensor& Into(at::Tensor& out, const at::Tensor& result) {
  out.resize_(result.sizes());
  return out.copy_(result);
}
at::Tensor& MmOut(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  if (AllBf16({&self, &mat2, &out})) return Into(out, Mm(self, mat2));
  return at::meta::mm_out(out, self, mat2);
}
at::Tensor& BmmOut(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  if (AllBf16({&self, &mat2, &out})) return Into(out, Bmm(self, mat2));
  return at::meta::bmm_out(out, self, mat2);
}
at::Tensor& AddmmOut(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                     const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  if (AllBf16({&self, &mat1, &mat2, &out})) return Into(out, Addmm(self, mat1, mat2, beta, alpha));
  return at::meta::addmm_out(out, self, mat1, mat2, beta, alpha);
}
at::Tensor& BaddbmmOut(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                       const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  if (AllBf16({&self, &batch1, &batch2, &out})) {
    return Into(out, Baddbmm(self, batch1, batch2, beta, alpha));
  }
  return at::meta::baddbmm_out(out, self, batch1, batch2, beta, alpha);
}

}  // namespace

ScopedMetaUpcastGemm::ScopedMetaUpcastGemm() {
  const env::SilentWarnings quiet;  // registering over LibTorch's meta kernels is the point
  library_ = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::Meta,
                                              __FILE__, __LINE__);
  library_->impl("mm", TORCH_FN(Mm));
  library_->impl("bmm", TORCH_FN(Bmm));
  library_->impl("addmm", TORCH_FN(Addmm));
  library_->impl("baddbmm", TORCH_FN(Baddbmm));
  library_->impl("mm.out", TORCH_FN(MmOut));
  library_->impl("bmm.out", TORCH_FN(BmmOut));
  library_->impl("addmm.out", TORCH_FN(AddmmOut));
  library_->impl("baddbmm.out", TORCH_FN(BaddbmmOut));
}

ScopedMetaUpcastGemm::~ScopedMetaUpcastGemm() {
  const env::SilentWarnings quiet;
  library_.reset();
}

}  // namespace memsweep::estimate
