// memsweep/autocast.h. On the meta device autocast is LibTorch's PrivateUse1 autocast state with
// memsweep's kernels: the dispatch key AutocastPrivateUse1 is added to this thread's included
// keys while it is on (meta tensors do not carry an autocast key of their own), and for the
// operations autocast computes in lower precision a boxed kernel casts the fp32 meta tensors
// among the arguments — leaf parameters through a cache, as LibTorch's cached_cast does — and
// redispatches below the key.
#include "memsweep/autocast.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/env/silent_warnings.h"
#include "core/sdk/meta_target.h"

namespace memsweep {
namespace {

constexpr c10::DeviceType kMetaAutocast = c10::DeviceType::PrivateUse1;
constexpr c10::DispatchKey kMetaAutocastKey = c10::DispatchKey::AutocastPrivateUse1;

// The meta device's weight cache: a leaf fp32 parameter's low-precision copy, for as long as the
// cache is not cleared (LibTorch's keys by TensorImpl, holding the source weakly; so does this).
struct CacheEntry {
  c10::weak_intrusive_ptr<c10::TensorImpl> source;
  at::Tensor cast;
};
thread_local std::unordered_map<c10::TensorImpl*, CacheEntry> t_cache;

at::Tensor Cast(const at::Tensor& t, c10::ScalarType to) {
  if (!t.defined() || !t.is_meta() || t.scalar_type() != at::kFloat) return t;
  const bool cacheable = t.requires_grad() && t.is_leaf() && !t.is_view() &&
                         at::autocast::is_autocast_cache_enabled();
  if (cacheable) {
    auto it = t_cache.find(t.unsafeGetTensorImpl());
    if (it != t_cache.end() && !it->second.source.expired()) return it->second.cast;
  }
  at::Tensor cast = t.to(to);
  if (cacheable) {
    t_cache.insert_or_assign(
        t.unsafeGetTensorImpl(),
        CacheEntry{c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr()), cast});
  }
  return cast;
}

// autocast's lower-precision policy for one operation, on meta tensors.
void LowerPrecision(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                    torch::jit::Stack* stack) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(kMetaAutocastKey);
  const c10::ScalarType to = at::autocast::get_autocast_dtype(kMetaAutocast);
  const size_t n = op.schema().arguments().size();
  for (size_t i = stack->size() - n; i < stack->size(); ++i) {
    c10::IValue& v = (*stack)[i];
    if (v.isTensor()) {
      v = Cast(v.toTensor(), to);
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> list = v.toTensorList();
      for (size_t j = 0; j < list.size(); ++j) list.set(j, Cast(list.get(j), to));
      v = list;
    }
  }
  op.redispatchBoxed(keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kMetaAutocastKey),
                     stack);
}

// Whether an argument is one autocast would cast: a floating meta tensor, not float64
// (at::autocast::is_eligible).
bool Eligible(const at::Tensor& t) {
  return t.defined() && t.is_meta() && at::isFloatingType(t.scalar_type()) &&
         t.scalar_type() != at::kDouble;
}

// The operations autocast computes in fp32 (its fp32 policy) on the device an estimate stands
// for, by operator name and overload: CUDA's AT_FORALL_FP32 (ATen/autocast_mode.h) and the CPU's
// own list (ATen/autocast_mode.cpp), each as far as a training step's operations reach.
const std::unordered_set<std::string>& Fp32Operators(c10::DeviceType target) {
  static const std::unordered_set<std::string> cuda = {
      "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
      "reciprocal", "rsqrt", "sinh", "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor",
      "pow.Scalar", "softplus", "layer_norm", "native_layer_norm", "group_norm",
      "frobenius_norm.dim", "nuclear_norm", "nuclear_norm.dim", "cosine_similarity",
      "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
      "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
      "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
      "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm",
      "logsumexp"};
  static const std::unordered_set<std::string> cpu = {
      "prod", "prod.dim_int", "cdist", "trace", "mse_loss", "cosine_embedding_loss", "nll_loss",
      "nll_loss2d", "hinge_embedding_loss", "poisson_nll_loss", "smooth_l1_loss",
      "cross_entropy_loss", "l1_loss", "huber_loss", "margin_ranking_loss", "soft_margin_loss",
      "triplet_margin_loss", "multi_margin_loss", "kl_div", "multilabel_margin_loss",
      "binary_cross_entropy_with_logits", "binary_cross_entropy"};
  return target == c10::DeviceType::CUDA ? cuda : cpu;
}

// CUDA's fp32_set_opt_dtype list (AT_FORALL_FP32_SET_OPT_DTYPE), as far as a training step reaches.
const std::unordered_set<std::string>& Fp32SetOptDtypeOperators() {
  static const std::unordered_set<std::string> names = {
      "prod", "prod.dim_int", "softmax.int", "log_softmax.int", "cumprod", "cumsum",
      "linalg_vector_norm", "linalg_matrix_norm", "linalg_matrix_norm.str_ord", "sum",
      "sum.dim_IntList"};
  return names;
}

// Every eligible tensor argument of `op` in a lower precision, widened to fp32 in place on the stack.
void WidenArguments(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto widen = [](const at::Tensor& t) {
    return Eligible(t) && t.scalar_type() != at::kFloat ? t.to(at::kFloat) : t;
  };
  const size_t n = op.schema().arguments().size();
  for (size_t i = stack->size() - n; i < stack->size(); ++i) {
    c10::IValue& v = (*stack)[i];
    if (v.isTensor()) {
      v = widen(v.toTensor());
    } else if (v.isTensorList()) {
      c10::List<at::Tensor> list = v.toTensorList();
      for (size_t j = 0; j < list.size(); ++j) list.set(j, widen(list.get(j)));
      v = list;
    }
  }
}

// autocast's fp32 policy: on the target's list, every eligible argument in a lower precision is
// computed in fp32 — cross_entropy_loss over bf16 logits under CPU autocast takes an fp32 copy of
// them, exp of a bf16 tensor under CUDA autocast returns fp32. One instance per combination of
// lists the operation is on, chosen when the kernels are registered.
template <bool kOnCudaList, bool kOnCpuList>
void Fp32(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(kMetaAutocastKey);
  const bool cuda = MetaDeviceTarget() == c10::DeviceType::CUDA;
  if (cuda ? kOnCudaList : kOnCpuList) WidenArguments(op, stack);
  op.redispatchBoxed(keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kMetaAutocastKey),
                     stack);
}

// CUDA's fp32_set_opt_dtype policy (softmax, log_softmax, sum, cumsum, prod, the vector and
// matrix norms): without a dtype of the caller's, the result is computed and returned in fp32
// when the first argument is eligible — a bf16 tensor's softmax under CUDA autocast is an fp32
// tensor, twice its bytes. (prod is on the CPU's fp32 list instead.)
template <bool kOnCpuList>
void Fp32SetOptDtype(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                     torch::jit::Stack* stack) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(kMetaAutocastKey);
  const auto& arguments = op.schema().arguments();
  const size_t base = stack->size() - arguments.size();
  if (kOnCpuList && MetaDeviceTarget() == c10::DeviceType::CPU) {
    WidenArguments(op, stack);
  } else if (MetaDeviceTarget() == c10::DeviceType::CUDA && (*stack)[base].isTensor() &&
             Eligible((*stack)[base].toTensor())) {
    for (size_t i = 0; i < arguments.size(); ++i) {
      if (arguments[i].name() == "dtype" && (*stack)[base + i].isNone()) {
        (*stack)[base + i] = c10::IValue(at::kFloat);
      }
    }
  }
  op.redispatchBoxed(keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kMetaAutocastKey),
                     stack);
}

// The operations LibTorch's CPU and CUDA autocast compute in lower precision that a training
// step of memsweep's models reaches (ATen/autocast_mode.cpp's lists), and the ones each computes
// in fp32 (CUDA: ATen/autocast_mode.h's AT_FORALL_FP32 and AT_FORALL_FP32_SET_OPT_DTYPE; the
// CPU: its losses, prod, cdist, trace). Not applied: CUDA's norm overloads that append a dtype,
// the `promote` lists (addcmul, index_put, scatter_add; the CPU's cat and stack), whose results
// type promotion gives anyway, and the CPU's linear-algebra, FFT and pooling entries.
void InstallKernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    const env::SilentWarnings quiet;
    // Every other operation passes the key by (LibTorch registers no fallback for it).
    static auto* fallback = new torch::Library(torch::Library::IMPL, "_", kMetaAutocastKey,
                                               __FILE__, __LINE__);
    fallback->fallback(torch::CppFunction::makeFallthrough());
    static auto* library = new torch::Library(torch::Library::IMPL, "aten", kMetaAutocastKey,
                                              __FILE__, __LINE__);
    // The fused attention kernels too: on meta tensors attention/sdpa calls the kernel that
    // scaled_dot_product_attention (on the list) would, so their inputs are cast as its.
    for (const char* name : {"mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear",
                             "linalg_vecdot", "scaled_dot_product_attention", "prelu",
                             "_scaled_dot_product_flash_attention_for_cpu",
                             "_scaled_dot_product_efficient_attention"}) {
      library->impl(name, torch::CppFunction::makeFromBoxedFunction<&LowerPrecision>());
    }
    // Registered for both targets' lists; each kernel knows which lists its operation is on.
    const auto& cuda_fp32 = Fp32Operators(c10::DeviceType::CUDA);
    const auto& cpu_fp32 = Fp32Operators(c10::DeviceType::CPU);
    std::unordered_set<std::string> fp32 = cuda_fp32;
    fp32.insert(cpu_fp32.begin(), cpu_fp32.end());
    for (const std::string& name : fp32) {
      // An operation on both policies' lists (prod) takes the set-opt-dtype kernel, below,
      // which applies the CPU's fp32 policy for a CPU target.
      if (Fp32SetOptDtypeOperators().count(name) > 0) continue;
      const bool on_cuda = cuda_fp32.count(name) > 0, on_cpu = cpu_fp32.count(name) > 0;
      library->impl(name.c_str(),
                    on_cuda && on_cpu ? torch::CppFunction::makeFromBoxedFunction<&Fp32<true, true>>()
                    : on_cuda         ? torch::CppFunction::makeFromBoxedFunction<&Fp32<true, false>>()
                                      : torch::CppFunction::makeFromBoxedFunction<&Fp32<false, true>>());
    }
    for (const std::string& name : Fp32SetOptDtypeOperators()) {
      library->impl(name.c_str(), cpu_fp32.count(name) > 0
                              ? torch::CppFunction::makeFromBoxedFunction<&Fp32SetOptDtype<true>>()
                              : torch::CppFunction::makeFromBoxedFunction<&Fp32SetOptDtype<false>>());
    }
  });
}

}  // namespace

void SetAutocast(c10::DeviceType device, bool enabled, c10::ScalarType dtype) {
  if (device != c10::DeviceType::Meta) {
    at::autocast::set_autocast_dtype(device, dtype);
    at::autocast::set_autocast_enabled(device, enabled);
    return;
  }
  if (enabled) InstallKernels();
  at::autocast::set_autocast_dtype(kMetaAutocast, dtype);
  at::autocast::set_autocast_enabled(kMetaAutocast, enabled);  // the key leaves the excluded set
  c10::impl::tls_set_dispatch_key_included(kMetaAutocastKey, enabled);
}

bool AutocastEnabled(c10::DeviceType device) {
  return at::autocast::is_autocast_enabled(device == c10::DeviceType::Meta ? kMetaAutocast : device);
}

c10::ScalarType AutocastDtype(c10::DeviceType device) {
  return at::autocast::get_autocast_dtype(device == c10::DeviceType::Meta ? kMetaAutocast : device);
}

void ClearAutocastCache() {
  at::autocast::clear_cache();
  t_cache.clear();
}

}  // namespace memsweep
