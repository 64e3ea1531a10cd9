#include "block_groups.h"

namespace memsweep::sharding {

BlockGroups GroupByBlock(model::Model& model, const std::vector<at::Tensor>& params) {
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
