// sharding/zero2: optimizer state and gradients partitioned over the ranks (common/zero_engine.h).
#include "../common/zero_engine.h"
#include "../common/zero_strategy.h"

namespace {

using memsweep::sharding::OffloadChoice;

memsweep::sharding::ZeroOptions Options(const memsweep::PluginParams& p) {
  memsweep::sharding::ZeroOptions o;
  o.stage = 2;
  o.reduce_bucket_size = p.Int("reduce_bucket_size");
  o.offload_optimizer = OffloadChoice(p, "offload_optimizer");
  return o;
}

class Zero2 final : public memsweep::sharding::ZeroStrategy<memsweep::sharding::ZeroEngine> {
 public:
  explicit Zero2(const memsweep::PluginParams& p) : ZeroStrategy(Options(p)) {}
};

const MemsweepParamSpec kParams[] = {
    {"reduce_bucket_size", MEMSWEEP_PARAM_INT, "500000000",
     "gradient elements per collective (DeepSpeed's reduce_bucket_size)", 0},
    {"offload_optimizer", MEMSWEEP_PARAM_STRING, "\"none\"",
     "\"cpu\": optimizer state and update in the host pool, outside the device budget", 0}};

}  // namespace

MEMSWEEP_PLUGIN(Zero2, "zero2", "sharding", "1.0.0",
                "ZeRO-2: optimizer state and gradients partitioned over the ranks", kParams, /*slot_default=*/0)
