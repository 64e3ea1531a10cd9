#include "trainer_groups.h"

namespace memsweep::plugins::optimizer_common {

TrainerGroups MakeTrainerGroups(const std::vector<at::Tensor>& tensors, bool trainer) {
  TrainerGroups groups;
  if (!trainer) {
    groups.members.emplace_back();
    for (size_t i = 0; i < tensors.size(); ++i) groups.members.back().push_back(i);
    groups.decays = {true};
    return groups;
  }
  groups.members.resize(2);
  for (size_t i = 0; i < tensors.size(); ++i) {
    groups.members[tensors[i].dim() >= 2 ? 0 : 1].push_back(i);
  }
  groups.decays = {true, false};
  return groups;
}

}  // namespace memsweep::plugins::optimizer_common
