// BlockGroups: the model's parameters grouped the way the ZeRO plugins gather and reduce them —
// one group per decoder block, in block order, and a last group with everything outside the
// blocks (embedding, final norm, LM head).
#pragma once

#include <ATen/ATen.h>

#include <unordered_map>
#include <vector>

#include "memsweep/strategy.h"

namespace memsweep::sharding {

struct BlockGroups {
  // groups[b] for block b < blocks; groups[blocks] the rest. Indices into the parameter list.
  std::vector<std::vector<size_t>> groups;
  std::unordered_map<const model::Block*, size_t> block_index;
  size_t blocks = 0;
};

// The groups of `params` (the model's parameter list) by decoder block.
BlockGroups GroupByBlock(model::Model& model, const std::vector<at::Tensor>& params);

}  // namespace memsweep::sharding
