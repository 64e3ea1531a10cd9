// The CPU's bf16 upcast products on the meta device (docs/estimate.md). On a CPU without native
// bf16 arithmetic a run multiplies bf16 matrices through memsweep's upcast path (env/cpu_gemm.h):
// both operands widened to fp32, an fp32 product, the result rounded to bf16 — three transient
// tensors LibTorch's meta kernels for mm, bmm, addmm and baddbmm do not allocate. While a
// ScopedMetaUpcastGemm lives, bf16 products on meta tensors allocate them as the CPU run does;
// other dtypes keep LibTorch's meta kernels. The estimate of a CPU cell holds one when the cell's
// `[device] gemm` chooses the upcast path on this machine.
#pragma once

#include <memory>

namespace torch {
class Library;
}

namespace memsweep::estimate {

class ScopedMetaUpcastGemm {
 public:
  ScopedMetaUpcastGemm();
  ~ScopedMetaUpcastGemm();
  ScopedMetaUpcastGemm(const ScopedMetaUpcastGemm&) = delete;
  ScopedMetaUpcastGemm& operator=(const ScopedMetaUpcastGemm&) = delete;

 private:
  std::unique_ptr<torch::Library> library_;
};

}  // namespace memsweep::estimate
