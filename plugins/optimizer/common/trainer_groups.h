// The parameter groups an optimizer steps, as transformers' Trainer builds them
// (Trainer.create_optimizer): tensors of two or more dimensions with weight decay, then the 1-D
// ones (biases and norms: in every model memsweep builds exactly the names the Trainer's
// no-decay patterns match) without — or one group of every tensor, as
// torch.optim.X(model.parameters()) has it. torch steps groups one after another, so the
// grouping decides the order tensors are updated in and when a group's temporaries are freed.
//
//   const TrainerGroups groups = MakeTrainerGroups(tensors, /*trainer=*/true);
//   for (size_t g = 0; g < groups.members.size(); ++g) Update(groups.members[g], groups.decays[g]);
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <vector>

namespace memsweep::plugins::optimizer_common {

struct TrainerGroups {
  std::vector<std::vector<size_t>> members;  // indices into the tensors, per group, in step order
  std::vector<bool> decays;                  // the group takes [optimizer] weight_decay (else 0)
};

// `trainer`: the Trainer's two groups; else one group, weight decay on every tensor. Within a
// group the tensors keep their order (the host's: transformers' model.parameters()).
TrainerGroups MakeTrainerGroups(const std::vector<at::Tensor>& tensors, bool trainer);

}  // namespace memsweep::plugins::optimizer_common
