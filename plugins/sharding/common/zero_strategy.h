// The ShardingStrategy of the ZeRO plugins: every call forwards to the stage's engine
// (ZeroEngine for stages 1 and 2, Zero3Engine for stage 3). Each plugin only reads its options.
#pragma once

#include <utility>
#include <vector>

#include "memsweep/plugin.h"

namespace memsweep::sharding {

// "none" or "cpu" (DeepSpeed's offload_optimizer / offload_param device); true for "cpu".
bool OffloadChoice(const PluginParams& params, const char* name);

template <typename Engine>
class ZeroStrategy : public ShardingStrategy {
 public:
  template <typename Options>
  explicit ZeroStrategy(Options options) : engine_(std::move(options)) {}
  // The same update as one process on the global batch; only the summation order differs.
  bool MathPreserving() const override { return true; }
  void OnStageBegin(Stage stage, RunContext& ctx) override { engine_.OnStageBegin(stage, ctx); }
  void OnStageEnd(Stage stage, RunContext& ctx) override { engine_.OnStageEnd(stage, ctx); }
  void OnParametersBuilt(const std::vector<size_t>& built, RunContext& ctx) override {
    engine_.ParametersBuilt(built, ctx);
  }
  std::optional<std::vector<StageHook>> StageHooks() const override {
    return engine_.StageHooks();
  }
  bool OwnsOptimizerStep() const override { return true; }
  double OptimizerStep(RunContext& ctx, const OptimizerStepSpec& spec) override {
    return engine_.OptimizerStep(ctx, spec);
  }
  void AdoptOptimizerParameters(RunContext& ctx, std::vector<at::Tensor> updated) override {
    engine_.AdoptOptimizerParameters(ctx, updated);
  }
  // Master copies are partitioned group by group while the model is built.
  bool AdoptsOptimizerParametersByGroup() const override { return true; }
  void AdoptGroupOptimizerParameters(RunContext& ctx, const std::vector<size_t>& built,
                                     std::vector<at::Tensor> updated) override {
    engine_.AdoptGroupOptimizerParameters(ctx, built, updated);
  }
  void AddModelState(ModelStateTensors& state) const override { engine_.AddModelState(state); }
  model::BlockRunner WrapBlockRunner(model::BlockRunner inner) override {
    return engine_.WrapBlockRunner(std::move(inner));
  }

 private:
  Engine engine_;
};

}  // namespace memsweep::sharding
