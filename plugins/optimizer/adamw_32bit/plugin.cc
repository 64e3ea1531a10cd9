// optimizer/adamw_32bit: bitsandbytes' 32-bit AdamW (bnb.optim.AdamW32bit; with paged = true
// PagedAdamW32bit) — transformers' optim="paged_adamw_32bit". fp32 moments, as optimizer/adamw's,
// in bitsandbytes' arithmetic; paged, they live in CUDA unified memory. The same optimizer as
// optimizer/adamw_8bit's with 32-bit state (its code is linked in: plugin.cmake); README.md has
// the bytes.
#include <memory>
#include <string>

#include "memsweep/plugin.h"
#include "optimizer/adamw_8bit/bnb_adamw.h"

namespace {

namespace opt = memsweep::plugins::optimizer;

class AdamW32bit final : public memsweep::OptimizerStrategy {
 public:
  explicit AdamW32bit(const memsweep::PluginParams& params) {
    options_.bits = 32;
    options_.paged = params.Bool("paged");
  }
  // AdamW's update up to rounding (bitsandbytes' CPU backend orders it as torch's AdamW does;
  // its CUDA kernel decays after the step, O(lr²·wd) apart).
  bool MathPreserving() const override { return true; }
  std::string DeviceRefusal(c10::DeviceType device) const override {
    if (options_.paged && device == c10::DeviceType::CPU) {
      return "paged state lives in CUDA unified memory; on the CPU use paged = false";
    }
    return "";
  }
  std::unique_ptr<memsweep::Optimizer> MakeOptimizer(
      const std::vector<at::Tensor>& tensors) override {
    return std::make_unique<opt::BnbAdamW>(tensors, options_, paged_bytes_);
  }
  // Paged moments are outside the device's allocator: their bytes, as a step figure.
  void OnStageEnd(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    if (options_.paged && stage == memsweep::Stage::kOptimizerStep && ctx.record_step) {
      ctx.record_step("adamw_32bit.paged_state_bytes", static_cast<double>(*paged_bytes_));
    }
  }
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    if (!options_.paged) return std::vector<memsweep::StageHook>{};
    return std::vector<memsweep::StageHook>{
        {memsweep::Stage::kOptimizerStep, memsweep::HookPoint::kEnd,
         "records the paged moments' bytes (adamw_32bit.paged_state_bytes)"}};
  }

 private:
  opt::BnbAdamWOptions options_;
  std::shared_ptr<int64_t> paged_bytes_ = std::make_shared<int64_t>(0);
};

const MemsweepParamSpec kParams[] = {
    {"paged", MEMSWEEP_PARAM_BOOL, "false",
     "moments of tensors of >= 100,000 elements in CUDA unified memory (PagedAdamW32bit); CUDA "
     "only",
     0}};

}  // namespace

MEMSWEEP_PLUGIN(AdamW32bit, "adamw_32bit", "optimizer", "1.0.0",
                "bitsandbytes' 32-bit AdamW: fp32 moments, paged or not", kParams,
                /*slot_default=*/0)
