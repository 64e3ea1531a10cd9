// precision/bf16-autocast: fp32 parameters, gradients and optimizer state; the forward pass
// runs under LibTorch's autocast for the run's device (CPU or CUDA), so matmuls (and what
// autocast lists) compute in bfloat16 and the activations they save for backward are bf16.
#include <ATen/autocast_mode.h>

#include <string>

#include "memsweep/plugin.h"

namespace {

class Bf16Autocast final : public memsweep::PrecisionStrategy {
 public:
  explicit Bf16Autocast(const memsweep::PluginParams&) {}
  ~Bf16Autocast() override { Disable(); }

  c10::ScalarType ComputeDtype() const override { return c10::ScalarType::BFloat16; }
  // Not math-preserving: bf16 GEMMs round what fp32 computes exactly.
  bool MathPreserving() const override { return false; }

  // LibTorch's autocast dispatches on CPU and CUDA tensors only: on the estimate's meta device
  // its casts would not happen and every activation would be counted in fp32.
  std::string DeviceRefusal(c10::DeviceType device) const override {
    if (device != c10::kMeta) return "";
    return "autocast does not dispatch on the meta device, so an estimate would count its bf16 "
           "activations as fp32; estimate with plugin = \"bf16\" (bf16 weights and activations) "
           "or \"fp32\" for a bound, or measure the cell with memsweep run";
  }

  void OnStageBegin(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    if (stage != memsweep::Stage::kForward) return;
    device_ = ctx.device.type();
    at::autocast::set_autocast_dtype(device_, at::kBFloat16);
    at::autocast::set_autocast_enabled(device_, true);
    enabled_ = true;
  }

  void OnStageEnd(memsweep::Stage stage, memsweep::RunContext&) override {
    if (stage == memsweep::Stage::kForward) Disable();
  }

 private:
  // Also runs when a forward pass ends in an exception (a budget OOM): autocast is process-wide
  // state and must not outlive the run.
  void Disable() {
    if (!enabled_) return;
    at::autocast::set_autocast_enabled(device_, false);
    at::autocast::clear_cache();
    enabled_ = false;
  }
  bool enabled_ = false;
  c10::DeviceType device_ = c10::kCPU;
};

}  // namespace

MEMSWEEP_PLUGIN(Bf16Autocast, "bf16-autocast", "precision", "1.0.0",
                "fp32 weights; forward under autocast (bf16 matmuls and saved activations), CPU or CUDA",
                MEMSWEEP_NO_PARAMS, /*slot_default=*/0)
