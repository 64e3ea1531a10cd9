// attention/eager: the reference attention. The full score matrix softmax(q·kᵀ/√D + mask) is
// materialised, as PyTorch's eager attention does: O(T²) memory per head.
#include "eager_attention.h"
#include "memsweep/plugin.h"

namespace {

class EagerAttention final : public memsweep::AttentionStrategy {
 public:
  // Math-preserving: the plain attention every other attention is compared with.
  bool MathPreserving() const override { return true; }
  explicit EagerAttention(const memsweep::PluginParams&) {}
  memsweep::model::AttentionFn MakeAttention() override {
    return memsweep::plugins::EagerCausalAttention;
  }
  // No stage hooks: its attention function does the work.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }
};

}  // namespace

MEMSWEEP_PLUGIN(EagerAttention, "eager", "attention", "1.0.0",
                "Materialised scores, causal (and per-document) mask, softmax in fp32",
                MEMSWEEP_NO_PARAMS, /*slot_default=*/1)
