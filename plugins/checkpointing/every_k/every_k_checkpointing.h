// checkpointing/every_k: blocks 0, k, 2k, ... are recomputed in backward; the others keep their
// activations.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "memsweep/model.h"

namespace memsweep::plugins::checkpointing {

// Which block is which: the position of each of a model's blocks, looked up by address (the
// BlockRunner receives the block, not its index). Filled from Model::Blocks().
class BlockIndex {
 public:
  void Assign(const model::Model& model);
  // The block's position in the model; throws when the block is not one of the indexed model's.
  int64_t Of(const model::Block& block) const;
  bool empty() const { return positions_.empty(); }

 private:
  std::unordered_map<const model::Block*, int64_t> positions_;
};

// Throws std::invalid_argument unless k >= 1.
void ValidateEveryK(int64_t k);

// A BlockRunner that checkpoints block i when i % k == 0 and runs the others directly. `index`
// must be assigned the model before its first forward; it is shared, so it can be (re)assigned
// after the runner is made.
model::BlockRunner MakeEveryKRunner(int64_t k, std::shared_ptr<const BlockIndex> index);

}  // namespace memsweep::plugins::checkpointing
