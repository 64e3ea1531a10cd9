// sharding/zero3: ZeRO-3 — optimizer state, gradients and parameters partitioned over the ranks;
// each block's parameters gathered just before its forward and backward (zero3_engine.h).
#include "zero3_engine.h"
#include "../common/zero_strategy.h"

namespace {

using memsweep::sharding::OffloadChoice;

memsweep::sharding::Zero3Options Options(const memsweep::PluginParams& p) {
  memsweep::sharding::Zero3Options o;
  o.reduce_bucket_size = p.Int("reduce_bucket_size");
  o.prefetch_bucket_size = p.Int("prefetch_bucket_size");
  o.param_persistence_threshold = p.Int("param_persistence_threshold");
  o.offload_optimizer = OffloadChoice(p, "offload_optimizer");
  o.offload_param = OffloadChoice(p, "offload_param");
  return o;
}

class Zero3 final : public memsweep::sharding::ZeroStrategy<memsweep::sharding::Zero3Engine> {
 public:
  explicit Zero3(const memsweep::PluginParams& p) : ZeroStrategy(Options(p)) {}
};

const MemsweepParamSpec kParams[] = {
    {"reduce_bucket_size", MEMSWEEP_PARAM_INT, "500000000",
     "gradient elements per collective (DeepSpeed's reduce_bucket_size)", 0},
    {"prefetch_bucket_size", MEMSWEEP_PARAM_INT, "0",
     "> 0: gather the next block with the current one when it has at most this many elements", 0},
    {"param_persistence_threshold", MEMSWEEP_PARAM_INT, "0",
     "parameters with fewer elements stay gathered on every rank", 0},
    {"offload_optimizer", MEMSWEEP_PARAM_STRING, "\"none\"",
     "\"cpu\": optimizer state and update in the host pool, outside the device budget", 0},
    {"offload_param", MEMSWEEP_PARAM_STRING, "\"none\"",
     "\"cpu\": the rank's parameter partition in the host pool (gathered blocks stay on device)", 0}};

}  // namespace

MEMSWEEP_PLUGIN(Zero3, "zero3", "sharding", "1.0.0",
                "ZeRO-3: optimizer state, gradients and parameters partitioned over the ranks", kParams, /*slot_default=*/0)
