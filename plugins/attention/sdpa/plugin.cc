// attention/sdpa: passes attention through to LibTorch's at::scaled_dot_product_attention
// (LibTorch >= 2.0; plugin.cmake skips this plugin on older builds). On a CUDA build that is
// PyTorch's fused (flash / memory-efficient) kernel; on the CPU, whatever LibTorch provides.
// Everything is in this one file so that the test binary, which compiles the other sources of
// every plugin folder, never sees code that needs LibTorch 2.
#include <ATen/ATen.h>
#include <torch/version.h>

#include "memsweep/plugin.h"

#if TORCH_VERSION_MAJOR < 2
#error "attention/sdpa needs LibTorch 2.0 or newer (plugin.cmake should have skipped it)"
#endif

namespace {

at::Tensor SdpaAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         const memsweep::model::AttentionInputs& inputs) {
  const int64_t heads = q.size(1), t = q.size(2);
  const at::Tensor keys = memsweep::model::RepeatKvHeads(k, heads);
  const at::Tensor values = memsweep::model::RepeatKvHeads(v, heads);
  if (!inputs.segment_ids.defined()) {
    return at::scaled_dot_product_attention(q, keys, values, /*attn_mask=*/{}, 0.0,
                                            /*is_causal=*/true);
  }
  // Packed rows: attend to earlier positions of the same document only (true = attend).
  const at::Tensor causal = at::ones({t, t}, q.options().dtype(at::kBool)).tril();
  const at::Tensor same_document =
      inputs.segment_ids.unsqueeze(2) == inputs.segment_ids.unsqueeze(1);  // [B, T, T]
  const at::Tensor allowed = (causal.unsqueeze(0) & same_document).unsqueeze(1);
  return at::scaled_dot_product_attention(q, keys, values, allowed, 0.0, /*is_causal=*/false);
}

class Sdpa final : public memsweep::AttentionStrategy {
 public:
  explicit Sdpa(const memsweep::PluginParams&) {}
  // The same attention as eager; only the summation order of the softmax differs.
  bool MathPreserving() const override { return true; }
  memsweep::model::AttentionFn MakeAttention() override { return SdpaAttention; }
};

}  // namespace

MEMSWEEP_PLUGIN(Sdpa, "sdpa", "attention", "1.0.0",
                "LibTorch's scaled_dot_product_attention (LibTorch >= 2.0 builds only)",
                MEMSWEEP_NO_PARAMS, /*slot_default=*/0)
