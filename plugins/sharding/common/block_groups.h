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

inline BlockGroups GroupByBlock(model::Model& model, const std::vector<at::Tensor>& params) {
  BlockGroups out;
  const std::vector<model::Block*> blocks = model.Blocks();
  out.blocks = blocks.size();
  std::unordered_map<const c10::TensorImpl*, size_t> group_of;
  for (size_t b = 0; b < blocks.size(); ++b) {
    out.block_index[blocks[b]] = b;
    for (const at::Tensor& p : blocks[b]->Parameters()) group_of[p.unsafeGetTensorImpl()] = b;
  }
  out.groups.resize(out.blocks + 1);
  for (size_t i = 0; i < params.size(); ++i) {
    const auto found = group_of.find(params[i].unsafeGetTensorImpl());
    out.groups[found == group_of.end() ? out.blocks : found->second].push_back(i);
  }
  return out;
}

}  // namespace memsweep::sharding
