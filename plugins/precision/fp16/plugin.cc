// precision/fp16: float16 autocast with dynamic loss scaling exists only for CUDA builds. On the
// CPU LibTorch has no fp16 matmul ("addmm_impl_cpu_" not implemented for 'Half') and refuses
// fp16 autocast, so this plugin rejects itself when the experiment is validated.
#include <stdexcept>

#include "memsweep/plugin.h"

namespace {

class Fp16 final : public memsweep::PrecisionStrategy {
 public:
  explicit Fp16(const memsweep::PluginParams&) {
    throw std::invalid_argument(
        "fp16 (autocast with dynamic loss scaling) needs a CUDA build of LibTorch: fp16 matmul "
        "does not exist on the CPU. Use plugin = \"bf16-autocast\" for mixed precision here");
  }
  c10::ScalarType ComputeDtype() const override { return c10::ScalarType::Half; }
  // Not math-preserving: fp16 arithmetic and loss scaling round what fp32 computes.
  bool MathPreserving() const override { return false; }
};

}  // namespace

MEMSWEEP_PLUGIN(Fp16, "fp16", "precision", "1.0.0",
                "fp16 autocast + dynamic loss scaling: CUDA builds only (rejected on the CPU)",
                MEMSWEEP_NO_PARAMS, /*slot_default=*/0)
