// kernels/fused: RMSNorm and SwiGLU as autograd functions that keep only their inputs (and one
// fp32 value per row for RMSNorm) and recompute the rest in backward, as Liger Kernel's fused
// kernels do — fewer activation bytes at the same values and gradients (fused_kernels.h).
#include "fused_kernels.h"
#include "memsweep/plugin.h"

namespace {

const MemsweepParamSpec kParams[] = {
    {"rms_norm", MEMSWEEP_PARAM_BOOL, "true",
     "every RMSNorm (each block's two and the final one) keeps its input and one fp32 value per "
     "row; false: the model's own",
     0},
    {"swiglu", MEMSWEEP_PARAM_BOOL, "true",
     "each MLP's silu(gate) * up keeps gate and up only; false: the model's own", 0},
};

class FusedKernels final : public memsweep::KernelsStrategy {
 public:
  explicit FusedKernels(const memsweep::PluginParams& params)
      : rms_norm_(params.Bool("rms_norm")), swiglu_(params.Bool("swiglu")) {}

  // The same values; the gradients by the same formulas (fused_kernels.cc).
  bool MathPreserving() const override { return true; }

  memsweep::model::Kernels MakeKernels() override {
    memsweep::model::Kernels kernels;
    if (rms_norm_) kernels.rms_norm = memsweep::plugins::kernels::FusedRmsNorm;
    if (swiglu_) kernels.swiglu = memsweep::plugins::kernels::FusedSwiGlu;
    return kernels;
  }
  // No stage hooks: its kernels do the work.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }

 private:
  bool rms_norm_;
  bool swiglu_;
};

}  // namespace

MEMSWEEP_PLUGIN(FusedKernels, "fused", "kernels", "1.0.0",
                "RMSNorm and SwiGLU that recompute in backward instead of keeping intermediates "
                "(Liger Kernel's fused kernels, as ATen operations)",
                kParams, /*slot_default=*/0)
