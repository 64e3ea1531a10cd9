// precision/fp32: parameters, activations and GEMMs in float32.
#include "memsweep/plugin.h"

namespace {

class Fp32 final : public memsweep::PrecisionStrategy {
 public:
  // Math-preserving: the float32 reference arithmetic.
  bool MathPreserving() const override { return true; }
  explicit Fp32(const memsweep::PluginParams&) {}
  c10::ScalarType ComputeDtype() const override { return c10::ScalarType::Float; }
  // No stage hooks: no cast, autocast or master copy to manage.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }
};

}  // namespace

MEMSWEEP_PLUGIN(Fp32, "fp32", "precision", "1.0.0", "Everything in float32", MEMSWEEP_NO_PARAMS,
                /*slot_default=*/1)
