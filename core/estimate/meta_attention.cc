#include "core/estimate/meta_attention.h"

#include "core/env/silent_warnings.h"
#include "core/sdk/meta_target.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <memory>
#include <mutex>
#include <optional>

namespace memsweep::estimate {
namespace {


// sdp::SDPBackend's values (ATen/native/transformers/sdp_utils_cpp.h).
constexpr int64_t kMath = 0, kFlash = 1, kEfficient = 2;

int64_t FusedSdpChoice(const at::Tensor& query, const at::Tensor& /*key*/,
                       const at::Tensor& /*value*/, const std::optional<at::Tensor>& attn_mask,
                       double dropout_p, bool /*is_causal*/, std::optional<double> /*scale*/,
                       bool /*enable_gqa*/) {
  if (query.dim() != 4) return kMath;
  if (MetaDeviceTarget() == c10::DeviceType::CPU) return kFlash;  // fp32, bf16 and fp16, masks too
  const bool half = query.scalar_type() == at::kBFloat16 || query.scalar_type() == at::kHalf;
  const bool masked = attn_mask.has_value() && attn_mask->defined();
  if (half && !masked && dropout_p == 0.0 && query.size(-1) <= 256) return kFlash;
  return kEfficient;
}

// Replaces LibTorch's meta choice (always math) for this process: the dispatcher warns that a
// kernel is overridden, which an estimate need not print.
void InstallChoice() {
  static std::once_flag once;
  std::call_once(once, [] {
    const env::SilentWarnings quiet;
    static auto* library = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::Meta,
                                              __FILE__, __LINE__);
    library->impl("_fused_sdp_choice", TORCH_FN(FusedSdpChoice));
  });
}

}  // namespace

void SetMetaTarget(c10::DeviceType target) {
  InstallChoice();
  SetMetaDeviceTarget(target);  // one setting for this choice and core's own per-device paths
}

c10::DeviceType MetaTarget() { return MetaDeviceTarget(); }

}  // namespace memsweep::estimate
