// optimizer/adamw_8bit: bitsandbytes' 8-bit AdamW (bnb.optim.AdamW8bit; with paged = true
// PagedAdamW8bit) — transformers' optim="adamw_bnb_8bit" / "paged_adamw_8bit", QLoRA's optimizer.
// Both moments in 8 bits, blockwise (256 values per fp32 absmax); tensors below min_8bit_size
// elements keep fp32 moments. The [optimizer] table's lr schedule, betas, eps and weight_decay
// drive it (bnb_adamw.h has the state and the update; README.md the bytes).
#include <memory>
#include <stdexcept>
#include <string>

#include "bnb_adamw.h"
#include "memsweep/plugin.h"

namespace {

namespace opt = memsweep::plugins::optimizer;

class AdamW8bit final : public memsweep::OptimizerStrategy {
 public:
  explicit AdamW8bit(const memsweep::PluginParams& params) {
    options_.bits = 8;
    options_.min_8bit_size = params.Int("min_8bit_size");
    options_.paged = params.Bool("paged");
    if (options_.min_8bit_size < 0) {
      throw std::invalid_argument("min_8bit_size = " + std::to_string(options_.min_8bit_size) +
                                  " is out of range: write a number of elements >= 0 (4096, "
                                  "bitsandbytes' default; 0 quantises every tensor)");
    }
  }
  // 8-bit moments round the update: not AdamW's arithmetic.
  bool MathPreserving() const override { return false; }
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
      ctx.record_step("adamw_8bit.paged_state_bytes", static_cast<double>(*paged_bytes_));
    }
  }
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    if (!options_.paged) return std::vector<memsweep::StageHook>{};
    return std::vector<memsweep::StageHook>{
        {memsweep::Stage::kOptimizerStep, memsweep::HookPoint::kEnd,
         "records the paged moments' bytes (adamw_8bit.paged_state_bytes)"}};
  }

 private:
  opt::BnbAdamWOptions options_;
  std::shared_ptr<int64_t> paged_bytes_ = std::make_shared<int64_t>(0);
};

const MemsweepParamSpec kParams[] = {
    {"min_8bit_size", MEMSWEEP_PARAM_INT, "4096",
     "tensors with fewer elements keep fp32 moments (bitsandbytes' min_8bit_size)", 0},
    {"paged", MEMSWEEP_PARAM_BOOL, "false",
     "moments of tensors of >= 100,000 elements in CUDA unified memory (PagedAdamW8bit); CUDA "
     "only",
     0}};

}  // namespace

MEMSWEEP_PLUGIN(AdamW8bit, "adamw_8bit", "optimizer", "1.0.0",
                "bitsandbytes' 8-bit AdamW: blockwise 8-bit moments (256 values per absmax), "
                "paged or not",
                kParams, /*slot_default=*/0)
