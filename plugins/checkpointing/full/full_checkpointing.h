// checkpointing/full: every decoder block is recomputed in backward.
#pragma once

#include "memsweep/model.h"

namespace memsweep::plugins::checkpointing {

// A BlockRunner that checkpoints every block: the forward keeps only each block's input x
// (cos/sin are shared by all blocks); backward recomputes the block and backpropagates.
model::BlockRunner MakeFullCheckpointingRunner();

}  // namespace memsweep::plugins::checkpointing
