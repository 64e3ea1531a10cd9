// sharding/zero2: ZeRO-2: optimizer state and gradients partitioned over the ranks (common/zero_engine.h).
#include "../common/zero_engine.h"
#include "memsweep/plugin.h"

namespace {

using memsweep::RunContext;
using memsweep::Stage;

memsweep::sharding::ZeroOptions Options(const memsweep::PluginParams& p) {
  memsweep::sharding::ZeroOptions o;
  o.stage = 2;
  o.reduce_bucket_size = p.Int("reduce_bucket_size");
  o.offload_optimizer = p.String("offload_optimizer") == "cpu";
  if (!o.offload_optimizer && p.String("offload_optimizer") != "none") {
    throw std::invalid_argument("offload_optimizer must be \"none\" or \"cpu\"");
  }
  return o;
}

class Zero2 final : public memsweep::ShardingStrategy {
 public:
  explicit Zero2(const memsweep::PluginParams& p) : engine_(Options(p)) {}
  // The same update as one process on the global batch; only the summation order differs.
  bool MathPreserving() const override { return true; }
  void OnStageBegin(Stage stage, RunContext& ctx) override { engine_.OnStageBegin(stage, ctx); }
  void OnStageEnd(Stage stage, RunContext& ctx) override { engine_.OnStageEnd(stage, ctx); }
  bool OwnsOptimizerStep() const override { return true; }
  double OptimizerStep(RunContext& ctx, const memsweep::OptimizerStepSpec& spec) override {
    return engine_.OptimizerStep(ctx, spec);
  }
  void AddModelState(memsweep::ModelStateTensors& state) const override {
    engine_.AddModelState(state);
  }

 private:
  memsweep::sharding::ZeroEngine engine_;
};

const MemsweepParamSpec kParams[] = {
    {"reduce_bucket_size", MEMSWEEP_PARAM_INT, "500000000",
     "gradient elements per collective (DeepSpeed's reduce_bucket_size)", 0},
    {"offload_optimizer", MEMSWEEP_PARAM_STRING, "\"none\"",
     "\"cpu\": optimizer state and update in the host pool, outside the device budget", 0}};

}  // namespace

MEMSWEEP_PLUGIN(Zero2, "zero2", "sharding", "1.0.0", "ZeRO-2: optimizer state and gradients partitioned over the ranks", kParams, /*slot_default=*/0)
