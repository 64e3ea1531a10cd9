// Shape-only kernels for the operations a training step reaches that LibTorch 2.11's C++ build
// has no meta kernel for (their meta implementations live in Python's torch._meta_registrations,
// which a C++ program does not load). Each allocates what the real kernel returns — the output's
// size, dtype and layout — through the meta device's allocator (core/memory/meta_tracking.h), so
// the estimate counts it; docs/estimate.md lists them and what the real kernels allocate besides.
// Registered for the Meta dispatch key only: CPU and CUDA tensors never reach them.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <array>
#include <optional>
#include <tuple>
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

// The bucket of every value (QLoRA's NF4 quantisation rounds to the nearest level with it).
at::Tensor Bucketize(const at::Tensor& self, const at::Tensor& /*boundaries*/, bool out_int32,
                     bool /*right*/) {
  return at::empty(self.sizes(), self.options().dtype(out_int32 ? at::kInt : at::kLong));
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

// The CPU's flash attention (ATen/native/transformers/attention.cpp and cpu/FlashAttentionKernel.cpp):
// the output in [B, L, H, E] memory viewed as [B, H, L, E], the log-sum-exp in the accumulation
// dtype, and while the kernel runs one scratch buffer per thread (its blocks of scores and
// running sums; in 16-bit a reduced-precision copy of the score block too).
int64_t QSplit(int64_t q_len) { return q_len >= 768 ? 256 : (q_len >= 192 ? 64 : 32); }
int64_t KvSplit(int64_t kv_len) { return kv_len >= 512 ? 512 : kv_len; }
bool Reduced(const at::Tensor& t) { return t.scalar_type() != at::kFloat && t.scalar_type() != at::kDouble; }
c10::ScalarType Accumulate(const at::Tensor& t) { return Reduced(t) ? at::kFloat : t.scalar_type(); }

std::tuple<at::Tensor, at::Tensor> FlashCpu(const at::Tensor& q, const at::Tensor& k,
                                            const at::Tensor& v, double, bool,
                                            const std::optional<at::Tensor>&,
                                            std::optional<double>) {
  const int64_t b = q.size(0), h = q.size(1), l = q.size(2), e = q.size(3), ev = v.size(3);
  const int64_t qs = QSplit(l), kvs = KvSplit(k.size(2)), threads = at::get_num_threads();
  at::Tensor out = at::empty({b, l, h, ev}, q.options());
  at::Tensor lse = at::empty({b, l, h}, q.options().dtype(Accumulate(q)));
  {
    const at::Tensor buf =
        at::empty({threads, qs * kvs + qs + qs + qs * e}, q.options().dtype(Accumulate(q)));
    const at::Tensor reduced = at::empty({threads, qs, Reduced(q) ? kvs : 0}, q.options());
  }
  return {out.transpose(1, 2), lse.transpose(1, 2)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> FlashCpuBackward(
    const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor&, const at::Tensor&, double, bool, const std::optional<at::Tensor>&,
    std::optional<double>) {
  const int64_t qs = QSplit(q.size(2)), kvs = KvSplit(k.size(2)), threads = at::get_num_threads();
  at::Tensor gq = at::empty_like(q), gk = at::empty_like(k), gv = at::empty_like(v);
  {
    const at::Tensor buf = at::empty({threads, 2 * qs * kvs}, q.options().dtype(Accumulate(q)));
    const at::Tensor reduced = at::empty({threads, Reduced(q) ? 2 * qs * kvs : 0}, q.options());
  }
  return {gq, gk, gv};
}

// CUDA's memory-efficient attention: the output in [B, L, H, E] memory, the log-sum-exp padded
// to a multiple of 32 rows, the dropout seed and offset.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> Efficient(
    const at::Tensor& q, const at::Tensor&, const at::Tensor& v, const std::optional<at::Tensor>&,
    bool compute_log_sumexp, double, bool, std::optional<double>) {
  const int64_t b = q.size(0), h = q.size(1), l = q.size(2), ev = v.size(3);
  at::Tensor out = at::empty({b, l, h, ev}, q.options()).transpose(1, 2);
  const int64_t rows = compute_log_sumexp ? (l + 31) / 32 * 32 : 0;
  at::Tensor lse = at::empty({b, h, rows}, q.options().dtype(at::kFloat));
  const at::TensorOptions seed = q.options().dtype(at::kLong);
  return {out, lse, at::empty({}, seed), at::empty({}, seed)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> EfficientBackward(
    const at::Tensor&, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& bias, const at::Tensor&, const at::Tensor&, const at::Tensor&,
    const at::Tensor&, double, std::array<bool, 4> mask, bool, std::optional<double>) {
  return {at::empty_like(q), at::empty_like(k), at::empty_like(v),
          mask[3] && bias.defined() ? at::empty_like(bias) : at::Tensor()};
}

TORCH_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("_scaled_dot_product_flash_attention_for_cpu", TORCH_FN(FlashCpu));
  m.impl("_scaled_dot_product_flash_attention_for_cpu_backward", TORCH_FN(FlashCpuBackward));
  m.impl("_scaled_dot_product_efficient_attention", TORCH_FN(Efficient));
  m.impl("_scaled_dot_product_efficient_attention_backward", TORCH_FN(EfficientBackward));
  m.impl("index_select", TORCH_FN(IndexSelect));
  m.impl("bucketize.Tensor", TORCH_FN(Bucketize));
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
