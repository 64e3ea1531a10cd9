// Shape-only kernels for the operations a training step reaches that LibTorch 2.11's C++ build
// has no meta kernel for (their meta implementations live in Python's torch._meta_registrations,
// which a C++ program does not load). Each allocates what the real kernel returns — the output's
// size, dtype and layout — through the meta device's allocator (core/memory/meta_tracking.h), so
// the estimate counts it; docs/estimate.md lists them and what the real kernels allocate besides.
// Registered for the Meta dispatch key only: CPU and CUDA tensors never reach them.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <vector>

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

// The broadcast of the three shapes, in the promoted dtype of self and other.
at::Tensor Where(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  const std::vector<int64_t> shape =
      at::infer_size(at::infer_size(condition.sizes(), self.sizes()), other.sizes());
  return at::empty(shape, self.options().dtype(at::result_type(self, other)));
}

// Pointwise operations with an out= argument (the functional forms allocate `out` and call
// these): the output takes the (broadcast) shape in the dtype the caller gave it.
at::Tensor& UnaryOut(const at::Tensor& self, at::Tensor& out) {
  out.resize_(self.sizes());
  return out;
}

at::Tensor& BinaryOut(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  out.resize_(at::infer_size(self.sizes(), other.sizes()));
  return out;
}

at::Tensor& WhereOut(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other,
                     at::Tensor& out) {
  out.resize_(at::infer_size(at::infer_size(condition.sizes(), self.sizes()), other.sizes()));
  return out;
}

TORCH_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("index_select", TORCH_FN(IndexSelect));
  m.impl("embedding_dense_backward", TORCH_FN(EmbeddingDenseBackward));
  m.impl("where.self", TORCH_FN(Where));
  m.impl("where.self_out", TORCH_FN(WhereOut));
  for (const char* op : {"logical_not.out", "abs.out"}) m.impl(op, TORCH_FN(UnaryOut));
  for (const char* op : {"logical_and.out", "logical_or.out", "logical_xor.out"}) {
    m.impl(op, TORCH_FN(BinaryOut));
  }
}

}  // namespace
}  // namespace memsweep::estimate
