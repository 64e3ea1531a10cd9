// checkpointing/selective: the attention core (scores, mask, softmax, dropout, probs·v) is
// recomputed in backward, as in Korthikanti et al. 2022 ("Reducing Activation Recomputation in
// Large Transformer Models"); everything else in the block keeps its activations.
#pragma once

#include "memsweep/attention.h"
#include "memsweep/model.h"

namespace memsweep::plugins::checkpointing {

// `attention` wrapped in a custom autograd function that keeps only q, k, v (and the attention
// inputs) for backward and runs `attention` again there to backpropagate through it.
model::AttentionFn CheckpointAttention(model::AttentionFn attention);

// A BlockRunner that runs the block directly with its attention core checkpointed.
at::Tensor RunBlockWithCheckpointedAttention(model::Block& block, const at::Tensor& x,
                                             const at::Tensor& cos, const at::Tensor& sin,
                                             const model::AttentionInputs& inputs,
                                             const model::AttentionFn& attention);

}  // namespace memsweep::plugins::checkpointing
