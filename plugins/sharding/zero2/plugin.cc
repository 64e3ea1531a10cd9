// sharding/zero2: optimizer state and gradients partitioned over the ranks
// (common/zero_stage_plugin.h).
#include "../common/zero_stage_plugin.h"

MEMSWEEP_PLUGIN(memsweep::sharding::ZeroStagePlugin<2>, "zero2", "sharding", "1.0.0",
                "ZeRO-2: optimizer state and gradients partitioned over the ranks",
                memsweep::sharding::kZeroStageParams, /*slot_default=*/0)
