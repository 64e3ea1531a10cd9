// The plugin behind sharding/zero1 and sharding/zero2: one ZeroEngine at a given ZeRO stage
// (common/zero_engine.h), with the parameters both take. Their plugin.cc files differ only in
// the stage, the name and the description.
#pragma once

#include "memsweep/plugin.h"
#include "zero_engine.h"
#include "zero_strategy.h"

namespace memsweep::sharding {

template <int kStage>
class ZeroStagePlugin final : public ZeroStrategy<ZeroEngine> {
 public:
  explicit ZeroStagePlugin(const PluginParams& p) : ZeroStrategy(Options(p)) {}
  // A frozen base (an adapter's) stays replicated and untouched: only the trainable parameters
  // are flattened, partitioned, reduced and updated (zero_engine.h).
  bool SupportsFrozenParameters() const override { return true; }

 private:
  static ZeroOptions Options(const PluginParams& p) {
    ZeroOptions o;
    o.stage = kStage;
    o.reduce_bucket_size = p.Int("reduce_bucket_size");
    o.offload_optimizer = OffloadChoice(p, "offload_optimizer");
    return o;
  }
};

inline constexpr MemsweepParamSpec kZeroStageParams[] = {
    {"reduce_bucket_size", MEMSWEEP_PARAM_INT, "500000000",
     "gradient elements per collective (DeepSpeed's reduce_bucket_size)", 0},
    {"offload_optimizer", MEMSWEEP_PARAM_STRING, "\"none\"",
     "\"cpu\": optimizer state and update in the host pool, outside the device budget", 0}};

}  // namespace memsweep::sharding
