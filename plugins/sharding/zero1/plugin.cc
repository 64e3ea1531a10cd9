// sharding/zero1: optimizer state partitioned over the ranks (common/zero_stage_plugin.h).
#include "../common/zero_stage_plugin.h"

MEMSWEEP_PLUGIN(memsweep::sharding::ZeroStagePlugin<1>, "zero1", "sharding", "1.0.0",
                "ZeRO-1: optimizer state partitioned over the ranks",
                memsweep::sharding::kZeroStageParams, /*slot_default=*/0)
