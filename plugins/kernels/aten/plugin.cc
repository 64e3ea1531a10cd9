// kernels/aten: the model's own RMSNorm and SwiGLU, compositions of ATen operations whose
// intermediates autograd keeps (Hugging Face's LlamaRMSNorm and LlamaMLP do the same).
#include "memsweep/plugin.h"

namespace {

class AtenKernels final : public memsweep::KernelsStrategy {
 public:
  explicit AtenKernels(const memsweep::PluginParams&) {}
  bool MathPreserving() const override { return true; }
  memsweep::model::Kernels MakeKernels() override { return {}; }  // empty: the model's own
  // No stage hooks: the model's own kernels run.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }
};

}  // namespace

MEMSWEEP_PLUGIN(AtenKernels, "aten", "kernels", "1.0.0",
                "RMSNorm and SwiGLU as compositions of ATen operations (transformers' modules)",
                MEMSWEEP_NO_PARAMS, /*slot_default=*/1)
