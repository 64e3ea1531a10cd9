#include "checkpointed_attention.h"

#include <utility>
#include <vector>

#include "memsweep/checkpoint.h"

namespace memsweep::plugins::checkpointing {

model::AttentionFn CheckpointAttention(model::AttentionFn attention) {
  return [attention = std::move(attention)](const at::Tensor& q, const at::Tensor& k,
                                            const at::Tensor& v,
                                            const model::AttentionInputs& inputs) {
    // q, k, v are kept; the attention core (softmax, probabilities) is recomputed in backward.
    return checkpoint::RunCheckpointed(
        [attention, inputs](const std::vector<at::Tensor>& t) {
          return attention(t[0], t[1], t[2], inputs);
        },
        {q, k, v});
  };
}

at::Tensor RunBlockWithCheckpointedAttention(model::Block& block, const at::Tensor& x,
                                             const at::Tensor& cos, const at::Tensor& sin,
                                             const model::AttentionInputs& inputs,
                                             const model::AttentionFn& attention) {
  return block.Forward(x, cos, sin, inputs, CheckpointAttention(attention));
}

}  // namespace memsweep::plugins::checkpointing
