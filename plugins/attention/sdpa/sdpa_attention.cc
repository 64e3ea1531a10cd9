#include "sdpa_attention.h"

#include <ATen/ATen.h>

#include "memsweep/compute_device.h"

#include <limits>
#include <stdexcept>

namespace memsweep::plugins {
namespace {

// true = attend: earlier positions of the same document ([B, 1, T, T]).
at::Tensor PackedCausalMask(const at::Tensor& q, const at::Tensor& segment_ids) {
  const int64_t t = q.size(2);
  const at::Tensor causal = at::ones({t, t}, q.options().dtype(at::kBool)).tril();
  const at::Tensor same_document = segment_ids.unsqueeze(2) == segment_ids.unsqueeze(1);
  return (causal.unsqueeze(0) & same_document).unsqueeze(1);
}

// The boolean mask as an additive bias (0 where allowed, -inf elsewhere), for the kernels that
// take a bias rather than a mask.
at::Tensor AdditiveBias(const at::Tensor& allowed, const at::Tensor& q) {
  at::Tensor bias = at::zeros(allowed.sizes(), q.options());
  return bias.masked_fill(allowed.logical_not(), -std::numeric_limits<float>::infinity());
}

}  // namespace

std::optional<SdpaBackend> ParseSdpaBackend(const std::string& name) {
  for (SdpaBackend b : {SdpaBackend::kAuto, SdpaBackend::kFlash, SdpaBackend::kEfficient,
                        SdpaBackend::kCudnn, SdpaBackend::kMath}) {
    if (name == SdpaBackendName(b)) return b;
  }
  return std::nullopt;
}

const char* SdpaBackendName(SdpaBackend backend) {
  switch (backend) {
    case SdpaBackend::kAuto: return "auto";
    case SdpaBackend::kFlash: return "flash";
    case SdpaBackend::kEfficient: return "efficient";
    case SdpaBackend::kCudnn: return "cudnn";
    case SdpaBackend::kMath: return "math";
  }
  return "auto";
}

// sdp::SDPBackend in ATen: error = -1, math = 0, flash_attention = 1, efficient_attention = 2,
// cudnn_attention = 3, overrideable = 4.
std::string FusedChoiceName(int64_t choice) {
  switch (choice) {
    case 0: return "math";
    case 1: return "flash";
    case 2: return "efficient";
    case 3: return "cudnn";
    case 4: return "overrideable";
    default: return "none";
  }
}

SdpaAttention::SdpaAttention(SdpaBackend backend)
    : backend_(backend), calls_(std::make_shared<std::map<std::string, int64_t>>()) {}

at::Tensor SdpaAttention::operator()(const at::Tensor& q, const at::Tensor& k,
                                     const at::Tensor& v, const model::AttentionInputs& inputs) {
  const bool grouped = k.size(1) != q.size(1);
  const bool packed = inputs.segment_ids.defined();
  const at::Tensor mask = packed ? PackedCausalMask(q, inputs.segment_ids) : at::Tensor();
  const std::optional<at::Tensor> optional_mask =
      packed ? std::optional<at::Tensor>(mask) : std::nullopt;
  // The kernels below the public function take an additive bias: the public one converts a
  // boolean mask itself before it dispatches.
  const std::optional<at::Tensor> optional_bias =
      packed && backend_ != SdpaBackend::kAuto ? std::optional<at::Tensor>(AdditiveBias(mask, q))
                                                 : std::nullopt;
  // Kernels without enable_gqa read key/value heads repeated to the query heads.
  auto repeated = [&](const at::Tensor& kv) {
    return grouped ? model::RepeatKvHeads(kv, q.size(1)) : kv;
  };
  switch (backend_) {
    case SdpaBackend::kAuto: {
      const int64_t choice = at::_fused_sdp_choice(q, k, v, optional_mask, 0.0, !packed,
                                                   std::nullopt, grouped);
      ++(*calls_)[FusedChoiceName(choice)];
      // An estimate's meta tensors (docs/estimate.md): scaled_dot_product_attention would take
      // the math kernel whatever the choice, so the chosen kernel is called as the public
      // function calls it on the device the estimate stands for (a boolean mask made additive).
      if (q.is_meta() && choice == 1) {  // flash: the CPU's kernel reads grouped heads as they are
        const std::optional<at::Tensor> bias =
            packed ? std::optional<at::Tensor>(AdditiveBias(mask, q)) : std::nullopt;
        return std::get<0>(at::_scaled_dot_product_flash_attention_for_cpu(
            q, k, v, 0.0, /*is_causal=*/!packed, bias));
      }
      if (q.is_meta() && choice == 2) {  // CUDA's memory-efficient kernel
        const std::optional<at::Tensor> bias =
            packed ? std::optional<at::Tensor>(AdditiveBias(mask, q)) : std::nullopt;
        return std::get<0>(at::_scaled_dot_product_efficient_attention(
            q, repeated(k), repeated(v), bias, /*compute_log_sumexp=*/q.requires_grad(), 0.0,
            /*is_causal=*/!packed));
      }
      return at::scaled_dot_product_attention(q, k, v, optional_mask, 0.0, /*is_causal=*/!packed,
                                              std::nullopt, /*enable_gqa=*/grouped);
    }
    case SdpaBackend::kMath:
      ++(*calls_)["math"];
      return std::get<0>(at::_scaled_dot_product_attention_math(
          q, k, v, optional_bias, 0.0, /*is_causal=*/!packed, /*dropout_mask=*/std::nullopt,
          std::nullopt, /*enable_gqa=*/grouped));
    case SdpaBackend::kFlash:
      ++(*calls_)["flash"];
      // ComputeDevice: an estimate's meta tensors take the path of the device they stand for.
      if (ComputeDevice(q) != c10::DeviceType::CPU && packed) {
        throw std::invalid_argument(
            "sdpa backend = \"flash\" on CUDA takes no mask, and packed rows need one: use "
            "backend = \"efficient\", \"cudnn\", \"math\" or \"auto\" with packing");
      }
      // The CPU's kernel, and for meta tensors standing for CUDA too: CUDA's flash kernel has no
      // meta form, and the CPU's keeps the same tensors.
      if (ComputeDevice(q) == c10::DeviceType::CPU || q.is_meta()) {
        return std::get<0>(at::_scaled_dot_product_flash_attention_for_cpu(
            q, repeated(k), repeated(v), 0.0, /*is_causal=*/!packed, optional_bias));
      }
      return std::get<0>(at::_scaled_dot_product_flash_attention(q, repeated(k), repeated(v), 0.0,
                                                                 /*is_causal=*/true));
    case SdpaBackend::kEfficient:
      ++(*calls_)["efficient"];
      return std::get<0>(at::_scaled_dot_product_efficient_attention(
          q, repeated(k), repeated(v), optional_bias,
          /*compute_log_sumexp=*/q.requires_grad() || k.requires_grad(), 0.0,
          /*is_causal=*/!packed));
    case SdpaBackend::kCudnn:
      ++(*calls_)["cudnn"];
      return std::get<0>(at::_scaled_dot_product_cudnn_attention(
          q, repeated(k), repeated(v), optional_bias,
          /*compute_log_sumexp=*/q.requires_grad() || k.requires_grad(), 0.0,
          /*is_causal=*/!packed));
  }
  throw std::logic_error("unknown sdpa backend");
}

at::Tensor SdpaCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const model::AttentionInputs& inputs) {
  const bool grouped = k.size(1) != q.size(1);
  if (!inputs.segment_ids.defined()) {
    return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, 0.0, /*is_causal=*/true,
                                            /*scale=*/std::nullopt, /*enable_gqa=*/grouped);
  }
  const at::Tensor allowed = PackedCausalMask(q, inputs.segment_ids);
  return at::scaled_dot_product_attention(q, k, v, allowed, 0.0, /*is_causal=*/false,
                                          /*scale=*/std::nullopt, /*enable_gqa=*/grouped);
}

}  // namespace memsweep::plugins
