// sharding/none: one process holds the whole model, gradients and optimizer state.
#include "memsweep/plugin.h"

namespace {

class NoSharding final : public memsweep::ShardingStrategy {
 public:
  // Math-preserving: nothing is partitioned.
  bool MathPreserving() const override { return true; }
  explicit NoSharding(const memsweep::PluginParams&) {}
};

}  // namespace

MEMSWEEP_PLUGIN(NoSharding, "none", "sharding", "1.0.0",
                "Single process: nothing is partitioned or communicated", MEMSWEEP_NO_PARAMS,
                /*slot_default=*/1)
