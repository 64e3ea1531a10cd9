// optimizer/torch_adamw: torch.optim.AdamW (torch 2.11) as users run it, in the implementation
// `implementation` names — its values, its state and every temporary it allocates
// (torch_adamw.h). "for-loop" is what a plain torch.optim.AdamW(model.parameters()) runs on the
// CPU; on CUDA torch defaults to "foreach" (transformers' "adamw_torch"), and "fused" is
// transformers' "adamw_torch_fused". `param_groups` = "trainer" (the default) groups the tensors
// as transformers' Trainer does; "single" is a plain AdamW(model.parameters()).
#include <stdexcept>
#include <string>

#include "memsweep/plugin.h"
#include "torch_adamw.h"

namespace {

using memsweep::plugins::torch_adamw::Implementation;
using memsweep::plugins::torch_adamw::ParamGroups;

Implementation CheckedImplementation(const memsweep::PluginParams& params) {
  const std::string name = params.String("implementation");
  if (auto implementation = memsweep::plugins::torch_adamw::ParseImplementation(name)) {
    return *implementation;
  }
  throw std::invalid_argument("implementation = \"" + name +
                              "\" is not one of torch's AdamW implementations: use "
                              "\"for-loop\", \"foreach\" or \"fused\"");
}

ParamGroups CheckedParamGroups(const memsweep::PluginParams& params) {
  const std::string name = params.String("param_groups");
  if (auto groups = memsweep::plugins::torch_adamw::ParseParamGroups(name)) return *groups;
  throw std::invalid_argument("param_groups = \"" + name +
                              "\" is not known: use \"trainer\" (transformers' Trainer: weight "
                              "decay on 2+-dim tensors only) or \"single\" (one group)");
}

class TorchAdamWStrategy final : public memsweep::OptimizerStrategy {
 public:
  explicit TorchAdamWStrategy(const memsweep::PluginParams& params)
      : implementation_(CheckedImplementation(params)), groups_(CheckedParamGroups(params)) {}
  // AdamW's update; only the rounding of its operations differs from memsweep's adamw.
  bool MathPreserving() const override { return true; }
  std::unique_ptr<memsweep::Optimizer> MakeOptimizer(
      const std::vector<at::Tensor>& tensors) override {
    using memsweep::plugins::torch_adamw::TorchAdamW;
    return std::make_unique<TorchAdamW>(tensors, implementation_, groups_);
  }
  // No stage hooks: the host calls Step in the optimizer_step stage.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }

 private:
  Implementation implementation_;
  ParamGroups groups_;
};

const MemsweepParamSpec kParams[] = {
    {"implementation", MEMSWEEP_PARAM_STRING, "\"for-loop\"",
     "torch's AdamW implementation: for-loop (the CPU's default), foreach (CUDA's default), "
     "fused",
     0},
    {"param_groups", MEMSWEEP_PARAM_STRING, "\"trainer\"",
     "\"trainer\": as transformers' Trainer groups them (tensors of 2+ dims with weight decay, "
     "then 1-D ones without, one optimizer call per group); \"single\": "
     "AdamW(model.parameters()), one group",
     0},
};

}  // namespace

MEMSWEEP_PLUGIN(TorchAdamWStrategy, "torch_adamw", "optimizer", "1.0.0",
                "torch.optim.AdamW as torch 2.11 runs it: for-loop, foreach or fused, with its "
                "temporaries",
                kParams, /*slot_default=*/0)
