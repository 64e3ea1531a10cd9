// Shape-only kernels for the operations a training step reaches that LibTorch 2.11's C++ build
// has no meta kernel for (their meta implementations live in Python's torch._meta_registrations,
// which a C++ program does not load). Each allocates what the real kernel returns — the output's
// size, dtype and layout — through the meta device's allocator (core/memory/meta_tracking.h), so
// the estimate counts it; docs/estimate.md lists them and what the real kernels allocate besides.
// Registered for the Meta dispatch key only: CPU and CUDA tensors never reach them.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace memsweep::estimate {
namespace {

at::Tensor IndexSelect(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  std::vector<int64_t> sizes = self.sizes().vec();
  if (!sizes.empty()) {
    const int64_t d = dim < 0 ? dim + self.dim() : dim;
    sizes[d] = index.numel();
  }
  return at::empty(sizes, self.options());
}

at::Tensor EmbeddingDenseBackward(const at::Tensor& grad, const at::Tensor& indices,
                                  c10::SymInt num_weights, c10::SymInt /*padding_idx*/,
                                  bool /*scale_grad_by_freq*/) {
  return at::empty({num_weights.expect_int(), grad.size(-1)}, grad.options());
}

TORCH_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("index_select", TORCH_FN(IndexSelect));
  m.impl("embedding_dense_backward", TORCH_FN(EmbeddingDenseBackward));
}

}  // namespace
}  // namespace memsweep::estimate
