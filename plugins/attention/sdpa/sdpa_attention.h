// Causal attention through LibTorch's scaled-dot-product-attention kernels. `auto` calls
// at::scaled_dot_product_attention, which picks a kernel itself: on the CPU its fused flash-style
// kernel, on CUDA among flash, memory-efficient, cuDNN and math (at::_fused_sdp_choice names the
// one it takes). A named backend calls that kernel directly — `flash` (CPU or CUDA), `efficient`
// and `cudnn` (CUDA only), `math` (scores materialised, as eager) — and fails with ATen's message
// where the kernel cannot take the inputs (flash on CUDA needs fp16/bf16). Grouped-query heads
// use enable_gqa where the kernel has it and repeated key/value heads where not; packed rows
// (segment ids) pass a block-diagonal causal mask (CUDA flash takes none: refused with a message).
//
//   SdpaAttention attention(SdpaBackend::kAuto);
//   model->SetAttention([&](auto& q, auto& k, auto& v, auto& in) { return attention(q, k, v, in); });
//   attention.Calls();   // {"flash": 12} — which kernel ran, how often
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "memsweep/attention.h"

namespace memsweep::plugins {

enum class SdpaBackend { kAuto, kFlash, kEfficient, kCudnn, kMath };

// "auto", "flash", "efficient", "cudnn", "math" (nullopt for anything else).
std::optional<SdpaBackend> ParseSdpaBackend(const std::string& name);
const char* SdpaBackendName(SdpaBackend backend);
// The kernel at::_fused_sdp_choice reports for an index ("math", "flash", ...).
std::string FusedChoiceName(int64_t choice);

class SdpaAttention {
 public:
  explicit SdpaAttention(SdpaBackend backend = SdpaBackend::kAuto);
  at::Tensor operator()(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                        const model::AttentionInputs& inputs);
  // Kernel name → calls, over the life of this object (shared by its copies).
  const std::map<std::string, int64_t>& Calls() const { return *calls_; }

 private:
  SdpaBackend backend_;
  std::shared_ptr<std::map<std::string, int64_t>> calls_;
};

// SdpaAttention(kAuto) without the counting.
at::Tensor SdpaCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const model::AttentionInputs& inputs);

}  // namespace memsweep::plugins
