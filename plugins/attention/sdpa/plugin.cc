// attention/sdpa: attention through LibTorch's at::scaled_dot_product_attention
// (sdpa_attention.h says which kernels that reaches on the CPU and on CUDA).
#include "sdpa_attention.h"
#include "memsweep/plugin.h"

namespace {

class Sdpa final : public memsweep::AttentionStrategy {
 public:
  explicit Sdpa(const memsweep::PluginParams&) {}
  // The same attention as eager; only the summation order of the softmax differs.
  bool MathPreserving() const override { return true; }
  memsweep::model::AttentionFn MakeAttention() override {
    return memsweep::plugins::SdpaCausalAttention;
  }
};

}  // namespace

MEMSWEEP_PLUGIN(Sdpa, "sdpa", "attention", "1.1.0",
                "LibTorch's scaled_dot_product_attention (fused flash kernel on the CPU when "
                "unmasked)",
                MEMSWEEP_NO_PARAMS, /*slot_default=*/0)
