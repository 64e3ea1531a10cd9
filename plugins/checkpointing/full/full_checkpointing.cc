#include "full_checkpointing.h"

#include "memsweep/checkpoint.h"

namespace memsweep::plugins::checkpointing {

model::BlockRunner MakeFullCheckpointingRunner() { return checkpoint::RunBlockCheckpointed; }

}  // namespace memsweep::plugins::checkpointing
