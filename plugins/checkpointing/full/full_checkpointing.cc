#include "full_checkpointing.h"

#include "../common/checkpointed_block.h"

namespace memsweep::plugins::checkpointing {

model::BlockRunner MakeFullCheckpointingRunner() { return RunBlockCheckpointed; }

}  // namespace memsweep::plugins::checkpointing
