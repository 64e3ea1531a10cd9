// optimizer/adafactor: transformers' Adafactor as users run it (transformers.optimization.
// Adafactor, 5.23.0), op for op (adafactor.h): factored second moments for tensors of ≥ 2 dims,
// the update's RMS clipped, its temporaries those transformers allocates. README.md has the
// parameters, the state's bytes and how it compares with transformers.
#include <stdexcept>
#include <string>

#include "adafactor.h"
#include "memsweep/plugin.h"

namespace {

using memsweep::plugins::optimizer::AdafactorGroups;
using memsweep::plugins::optimizer::AdafactorOptions;

const MemsweepParamSpec kParams[] = {
    {"first_moment", MEMSWEEP_PARAM_BOOL, "false",
     "keep exp_avg with [optimizer] beta1 (transformers' beta1); false: beta1 = None", 0},
    {"decay_rate", MEMSWEEP_PARAM_FLOAT, "-0.8", "beta2 at step t is 1 - t^decay_rate", 0},
    {"eps1", MEMSWEEP_PARAM_FLOAT, "1e-30", "added to the squared gradient (eps[0])", 0},
    {"eps2", MEMSWEEP_PARAM_FLOAT, "1e-3", "the least parameter scale (eps[1])", 0},
    {"clip_threshold", MEMSWEEP_PARAM_FLOAT, "1.0", "the update's RMS is clipped to this", 0},
    {"relative_step", MEMSWEEP_PARAM_BOOL, "true",
     "lr = min(1e-2, 1/sqrt(step)), and [optimizer] lr is ignored; false: the lr schedule", 0},
    {"scale_parameter", MEMSWEEP_PARAM_BOOL, "true",
     "lr times max(eps2, the parameter's RMS)", 0},
    {"warmup_init", MEMSWEEP_PARAM_BOOL, "false",
     "with relative_step: lr = min(1e-6 * step, 1/sqrt(step))", 0},
    {"param_groups", MEMSWEEP_PARAM_STRING, "\"trainer\"",
     "\"trainer\": as transformers' Trainer groups them (tensors of 2+ dims with weight decay, "
     "then 1-D ones without); \"single\": Adafactor(model.parameters()), one group", 0},
};

AdafactorGroups ParseGroups(const std::string& text) {
  if (text == "trainer") return AdafactorGroups::kTrainer;
  if (text == "single") return AdafactorGroups::kSingle;
  throw std::invalid_argument("param_groups = \"" + text +
                              "\" is not known; write \"trainer\" or \"single\"");
}

AdafactorOptions ReadOptions(const memsweep::PluginParams& params) {
  AdafactorOptions o;
  o.first_moment = params.Bool("first_moment");
  o.decay_rate = params.Float("decay_rate");
  o.eps1 = params.Float("eps1");
  o.eps2 = params.Float("eps2");
  o.clip_threshold = params.Float("clip_threshold");
  o.relative_step = params.Bool("relative_step");
  o.scale_parameter = params.Bool("scale_parameter");
  o.warmup_init = params.Bool("warmup_init");
  o.groups = ParseGroups(params.String("param_groups"));
  memsweep::plugins::optimizer::CheckAdafactorOptions(o);
  return o;
}

class AdafactorStrategy final : public memsweep::OptimizerStrategy {
 public:
  explicit AdafactorStrategy(const memsweep::PluginParams& params)
      : options_(ReadOptions(params)) {}
  // Not AdamW's update.
  bool MathPreserving() const override { return false; }
  std::unique_ptr<memsweep::Optimizer> MakeOptimizer(
      const std::vector<at::Tensor>& tensors) override {
    return std::make_unique<memsweep::plugins::optimizer::Adafactor>(tensors, options_);
  }
  // No stage hooks: the host calls Step in the optimizer_step stage.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }

 private:
  AdafactorOptions options_;
};

}  // namespace

MEMSWEEP_PLUGIN(AdafactorStrategy, "adafactor", "optimizer", "1.0.0",
                "transformers' Adafactor: factored second moments, RMS-clipped update",
                kParams, /*slot_default=*/0)
