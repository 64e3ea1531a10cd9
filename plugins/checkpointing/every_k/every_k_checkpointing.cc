#include "every_k_checkpointing.h"

#include <stdexcept>
#include <string>

#include "memsweep/checkpoint.h"

namespace memsweep::plugins::checkpointing {

void BlockIndex::Assign(const model::Model& model) {
  positions_.clear();
  const std::vector<model::Block*> blocks = model.Blocks();
  for (size_t i = 0; i < blocks.size(); ++i) {
    positions_[blocks[i]] = static_cast<int64_t>(i);
  }
}

int64_t BlockIndex::Of(const model::Block& block) const {
  const auto it = positions_.find(&block);
  if (it == positions_.end()) {
    throw std::runtime_error(
        "every_k: the block is not one of the model's blocks (the block index is assigned from "
        "the model at the model stage)");
  }
  return it->second;
}

void ValidateEveryK(int64_t k) {
  if (k < 1) {
    throw std::invalid_argument("every_k: k must be >= 1 (got " + std::to_string(k) +
                                "); set strategies.checkpointing.k to 1 or more");
  }
}

model::BlockRunner MakeEveryKRunner(int64_t k, std::shared_ptr<const BlockIndex> index) {
  ValidateEveryK(k);
  if (!index) throw std::invalid_argument("every_k: no block index");
  return [k, index](model::Block& block, const at::Tensor& x, const at::Tensor& cos,
                    const at::Tensor& sin, const model::AttentionInputs& inputs,
                    const model::AttentionFn& attention) {
    if (index->Of(block) % k == 0) {
      return checkpoint::RunBlockCheckpointed(block, x, cos, sin, inputs, attention);
    }
    return model::RunBlockDirectly(block, x, cos, sin, inputs, attention);
  };
}

}  // namespace memsweep::plugins::checkpointing
