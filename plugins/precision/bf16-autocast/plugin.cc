// precision/bf16-autocast: fp32 parameters, gradients and optimizer state; the forward pass
// runs under autocast for the run's device (CPU, CUDA, or an estimate's meta device:
// memsweep/autocast.h), so matmuls (and what autocast lists) compute in bfloat16 and the
// activations they save for backward are bf16.
#include <string>

#include "memsweep/autocast.h"
#include "memsweep/plugin.h"

namespace {

class Bf16Autocast final : public memsweep::PrecisionStrategy {
 public:
  explicit Bf16Autocast(const memsweep::PluginParams&) {}
  ~Bf16Autocast() override { Disable(); }

  c10::ScalarType ComputeDtype() const override { return c10::ScalarType::BFloat16; }
  // Not math-preserving: bf16 GEMMs round what fp32 computes exactly.
  bool MathPreserving() const override { return false; }

  void OnStageBegin(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    if (stage != memsweep::Stage::kForward) return;
    device_ = ctx.device.type();
    memsweep::SetAutocast(device_, true, at::kBFloat16);
    enabled_ = true;
  }

  void OnStageEnd(memsweep::Stage stage, memsweep::RunContext&) override {
    if (stage == memsweep::Stage::kForward) Disable();
  }

  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{
        {memsweep::Stage::kForward, memsweep::HookPoint::kBegin,
         "autocast to bf16 on (the run's device)"},
        {memsweep::Stage::kForward, memsweep::HookPoint::kEnd,
         "autocast off, its cache cleared"}};
  }

 private:
  // Also runs when a forward pass ends in an exception (a budget OOM): autocast is process-wide
  // state and must not outlive the run.
  void Disable() {
    if (!enabled_) return;
    memsweep::SetAutocast(device_, false, at::kBFloat16);
    memsweep::ClearAutocastCache();
    enabled_ = false;
  }
  bool enabled_ = false;
  c10::DeviceType device_ = c10::kCPU;
};

}  // namespace

MEMSWEEP_PLUGIN(Bf16Autocast, "bf16-autocast", "precision", "1.0.0",
                "fp32 weights; forward under autocast (bf16 matmuls and saved activations), CPU or CUDA",
                MEMSWEEP_NO_PARAMS, /*slot_default=*/0)
