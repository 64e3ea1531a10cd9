// precision/fp16: float16 autocast with dynamic loss scaling, memsweep's CUDA mixed-precision
// option. Cells train on the CPU device in this version, where bf16 (same 2-byte activations,
// fp32's exponent range, no loss scaling) is the mixed precision to use, so this plugin rejects
// itself when the experiment is validated.
#include <stdexcept>

#include "memsweep/plugin.h"

namespace {

class Fp16 final : public memsweep::PrecisionStrategy {
 public:
  explicit Fp16(const memsweep::PluginParams&) {
    throw std::invalid_argument(
        "fp16 (autocast with dynamic loss scaling) is for CUDA devices, and this run trains on "
        "the CPU device. Use plugin = \"bf16-autocast\" for mixed precision here");
  }
  c10::ScalarType ComputeDtype() const override { return c10::ScalarType::Half; }
  // Not math-preserving: fp16 arithmetic and loss scaling round what fp32 computes.
  bool MathPreserving() const override { return false; }
};

}  // namespace

MEMSWEEP_PLUGIN(Fp16, "fp16", "precision", "1.0.0",
                "fp16 autocast + dynamic loss scaling: CUDA devices only (rejected on the CPU)",
                MEMSWEEP_NO_PARAMS, /*slot_default=*/0)
