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
#include <unordered_map>
#include <utility>

#include "core/env/silent_warnings.h"

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

// The operations LibTorch's CPU and CUDA autocast compute in lower precision that a training
// step of memsweep's models reaches (ATen/autocast_mode.cpp's lists).
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
