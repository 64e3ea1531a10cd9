// adapter/none: full fine-tuning. Every parameter of the model trains; nothing is added.
#include "memsweep/plugin.h"

namespace {

class NoAdapter final : public memsweep::AdapterStrategy {
 public:
  explicit NoAdapter(const memsweep::PluginParams&) {}
  bool MathPreserving() const override { return true; }
  memsweep::AdapterPlan Plan(const memsweep::model::ModelShape& shape) const override {
    memsweep::AdapterPlan plan;
    plan.trainable_params = shape.parameters;
    return plan;
  }
  std::vector<memsweep::AdapterTensor> AdaptGroup(const std::vector<size_t>&,
                                                  memsweep::RunContext&) override {
    return {};
  }
  // No stage hooks: nothing to adapt.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }
};

}  // namespace

MEMSWEEP_PLUGIN(NoAdapter, "none", "adapter", "1.0.0",
                "Full fine-tuning: every parameter trains, no adapter", MEMSWEEP_NO_PARAMS,
                /*slot_default=*/1)
