// precision/fp16: float16 autocast with dynamic loss scaling, the mixed precision of GPUs
// without bf16 (T4, V100) and of many published recipes. fp32 parameters, gradients and
// optimizer state; the forward runs under CUDA autocast in float16; the loss is scaled before
// backward and the gradients unscaled and checked before the update (loss_scaler.h). A step whose
// gradients overflowed is skipped (the host neither clips nor updates); the scale before each
// step and whether it was skipped are recorded per step (fp16.loss_scale, fp16.skipped), and
// fp16.skipped_steps over the run. CUDA only: on the CPU use bf16-autocast.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

#include <limits>
#include <memory>
#include <stdexcept>

#include "loss_scaler.h"
#include "memsweep/autocast.h"
#include "memsweep/plugin.h"

namespace {

using memsweep::plugins::LossScaler;
using memsweep::plugins::LossScalerOptions;

LossScalerOptions CheckedOptions(const memsweep::PluginParams& params) {
  LossScalerOptions o;
  o.init_scale = params.Float("init_scale");
  o.growth_factor = params.Float("growth_factor");
  o.backoff_factor = params.Float("backoff_factor");
  o.growth_interval = params.Int("growth_interval");
  if (!(o.init_scale > 0)) throw std::invalid_argument("init_scale must be positive");
  if (!(o.growth_factor > 1)) throw std::invalid_argument("growth_factor must be above 1");
  if (!(o.backoff_factor > 0 && o.backoff_factor < 1)) {
    throw std::invalid_argument("backoff_factor must be between 0 and 1");
  }
  if (o.growth_interval < 1) throw std::invalid_argument("growth_interval must be at least 1");
  return o;
}

class Fp16 final : public memsweep::PrecisionStrategy {
 public:
  explicit Fp16(const memsweep::PluginParams& params)
      : options_(CheckedOptions(params)), inject_inf_at_step_(params.Int("inject_inf_at_step")) {}
  ~Fp16() override { DisableAutocast(); }
  c10::ScalarType ComputeDtype() const override { return c10::ScalarType::Half; }
  // Not math-preserving: fp16 arithmetic and loss scaling round what fp32 computes.
  bool MathPreserving() const override { return false; }
  // Overflowed steps are skipped; the gradients it unscales and checks are the parameters' .grad.
  bool SkipsSteps() const override { return true; }
  std::string DeviceRefusal(c10::DeviceType device) const override {
    // kMeta: memsweep estimate's shape-only device, which asks again for the device it stands for.
    if (device == c10::kCUDA || device == c10::kMeta) return "";
    return "fp16 autocast with loss scaling is for CUDA devices; on the CPU use plugin = "
           "\"bf16-autocast\" (same 2-byte activations, fp32's exponent range, no scaling)";
  }

  void OnStageBegin(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    using memsweep::Stage;
    if (stage == Stage::kOptimizer) {
      scaler_ = std::make_unique<LossScaler>(options_, ctx.device);
    } else if (stage == Stage::kForward) {
      device_ = ctx.device.type();
      memsweep::SetAutocast(device_, true, at::kHalf);  // CUDA's, or an estimate's meta autocast
      autocast_ = true;
    } else if (stage == Stage::kBackward && ctx.loss != nullptr && ctx.loss->defined()) {
      *ctx.loss = scaler_->Scale(*ctx.loss);
    } else if (stage == Stage::kOptimizerStep) {
      Unscale(ctx);
    }
  }
  void OnStageEnd(memsweep::Stage stage, memsweep::RunContext&) override {
    if (stage == memsweep::Stage::kForward) DisableAutocast();
    if (stage == memsweep::Stage::kOptimizerStep && scaler_) scaler_->Update();
  }
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    using memsweep::HookPoint;
    using memsweep::Stage;
    return std::vector<memsweep::StageHook>{
        {Stage::kOptimizer, HookPoint::kBegin, "creates the loss scaler"},
        {Stage::kForward, HookPoint::kBegin, "autocast to fp16 on"},
        {Stage::kForward, HookPoint::kEnd, "autocast off, its cache cleared"},
        {Stage::kBackward, HookPoint::kBegin, "scales the loss"},
        {Stage::kOptimizerStep, HookPoint::kBegin,
         "unscales the gradients; skips the step if any rank's overflowed"},
        {Stage::kOptimizerStep, HookPoint::kEnd, "updates the loss scale"}};
  }

 private:
  // Gradients back to their true size; the step is skipped when any of them overflowed (on any
  // rank: the flags are summed, so every rank skips the same steps).
  void Unscale(memsweep::RunContext& ctx) {
    std::vector<at::Tensor> grads;
    if (ctx.model != nullptr) {
      for (const at::Tensor& p : ctx.model->Parameters()) {
        if (p.grad().defined()) grads.push_back(p.grad());
      }
    }
    if (ctx.step == inject_inf_at_step_ && !grads.empty()) {
      grads.front().view({-1})[0].fill_(std::numeric_limits<float>::infinity());
    }
    const double scale = scaler_->CurrentScale();
    bool overflow = scaler_->UnscaleAndCheck(grads);
    if (ctx.comm != nullptr) {
      ctx.comm->AllReduceSum(scaler_->FoundInf());
      overflow = !scaler_->FoundInf().is_meta() && scaler_->FoundInf().item<float>() > 0.0f;
    }
    ctx.skip_optimizer_step = overflow;
    if (ctx.record_step) {
      ctx.record_step("fp16.loss_scale", scale);
      ctx.record_step("fp16.skipped", overflow ? 1.0 : 0.0);
    }
    if (ctx.record) ctx.record("fp16.skipped_steps", overflow ? 1.0 : 0.0);
  }
  // Also on the way out of a failed forward: autocast is process-wide state.
  void DisableAutocast() {
    if (!autocast_) return;
    memsweep::SetAutocast(device_, false, at::kHalf);
    memsweep::ClearAutocastCache();
    autocast_ = false;
  }

  LossScalerOptions options_;
  int64_t inject_inf_at_step_;
  std::unique_ptr<LossScaler> scaler_;
  c10::DeviceType device_ = c10::kCUDA;
  bool autocast_ = false;
};

const MemsweepParamSpec kParams[] = {
    {"init_scale", MEMSWEEP_PARAM_FLOAT, "65536.0", "the loss scale of the first step", 0},
    {"growth_factor", MEMSWEEP_PARAM_FLOAT, "2.0",
     "scale multiplier after growth_interval steps without overflow", 0},
    {"backoff_factor", MEMSWEEP_PARAM_FLOAT, "0.5", "scale multiplier after an overflow", 0},
    {"growth_interval", MEMSWEEP_PARAM_INT, "2000", "clean steps in a row before the scale grows",
     0},
    {"inject_inf_at_step", MEMSWEEP_PARAM_INT, "-1",
     "testing: write inf into one gradient at this optimizer step (-1 = never)", 0},
};

}  // namespace

MEMSWEEP_PLUGIN(Fp16, "fp16", "precision", "2.0.0",
                "fp16 autocast + dynamic loss scaling (skipped steps, scale per step): CUDA only",
                kParams, /*slot_default=*/0)
