// adapter/lora: LoRA (Hu et al. 2021) as Hugging Face PEFT builds it. The model's weights are
// frozen (no gradients, no optimizer state; stored in `base_dtype`), and each targeted module
// of each decoder block gains two trainable factors, A [rank, in] (Kaiming-uniform, a = √5) and
// B [out, rank] (zeros), so that step 0 computes exactly the base model:
//
//   y = x · Wᵀ + b + (dropout(x) · Aᵀ · Bᵀ) · alpha / rank      (alpha / √rank with use_rslora)
//
// The factors are made while the model is built, group by group, from a generator of their own
// (the experiment's seed and the block's index), so the base weights are drawn exactly as
// without an adapter (common/lora_adapter.h).
#include <ATen/ATen.h>

#include <stdexcept>

#include "../common/lora_adapter.h"
#include "../common/lora_linear.h"
#include "memsweep/plugin.h"

namespace {

using memsweep::plugins::adapter::BaseStore;
using memsweep::plugins::adapter::DtypeParam;
using memsweep::plugins::adapter::LoraAdapter;

const MemsweepParamSpec kParams[] = {
    MEMSWEEP_LORA_PARAM_SPECS,
    {"base_dtype", MEMSWEEP_PARAM_STRING, "\"fp32\"",
     "dtype the frozen base is stored in: fp32, bf16 or fp16", 0},
};

class Lora final : public memsweep::AdapterStrategy {
 public:
  explicit Lora(const memsweep::PluginParams& params)
      : lora_(params), base_dtype_(DtypeParam("base_dtype", params.String("base_dtype"))) {}

  // Not the full fine-tuning's math: only the factors (and modules to save) train.
  bool MathPreserving() const override { return false; }

  memsweep::AdapterPlan Plan(const memsweep::model::ModelShape& shape) const override {
    return lora_.Plan(shape);
  }

  std::vector<memsweep::AdapterTensor> AdaptGroup(const std::vector<size_t>& built,
                                                  memsweep::RunContext& ctx) override {
    const c10::ScalarType dtype = base_dtype_;
    BaseStore base;
    base.store = [dtype](at::Tensor& frozen) {
      if (frozen.is_floating_point() && frozen.scalar_type() != dtype) {
        frozen.set_data(frozen.to(dtype));
      }
    };
    base.forward = [](memsweep::model::LinearLayer&) {
      return memsweep::model::LinearFn(memsweep::plugins::adapter::FrozenLinear);
    };
    return lora_.AdaptGroup(built, ctx, base);
  }
  // No stage hooks: it works in AdaptGroup, as each group is built.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }

 private:
  LoraAdapter lora_;
  c10::ScalarType base_dtype_;
};

}  // namespace

MEMSWEEP_PLUGIN(Lora, "lora", "adapter", "1.0.0",
                "LoRA: frozen base, trainable low-rank factors on the chosen linear modules "
                "(PEFT's names and initialisation)",
                kParams, /*slot_default=*/0)
