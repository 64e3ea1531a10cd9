// ParamUnits: ZeRO-3's gather/free units. Each decoder block's parameters form one unit, the
// parameters outside the blocks (embedding, final norm, LM head) another; parameters smaller than
// param_persistence_threshold elements form a separate, always-gathered unit per group. A unit's
// parameters are views into one storage whose memory is swapped in (Gather) and out (Release):
// views taken from a parameter — including the ones autograd saved for backward, such as a
// weight's transpose — follow the storage, so a gathered block's backward reads the gathered
// values and a released block costs no device memory (DeepSpeed's storage().resize_(0) trick).
//
// Each rank owns one partition of the flat parameter vector (flat_partition.h); a gather
// broadcasts every rank's part of the unit's parameters from its owner.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "../common/flat_partition.h"
#include "memsweep/collectives.h"

namespace memsweep::sharding {

struct ParamUnit {
  std::vector<size_t> params;        // indices into the model's parameter list
  std::vector<int64_t> offsets;      // of each parameter within the unit's storage (elements)
  int64_t numel = 0;
  bool persistent = false;           // never released
  bool gathered = false;
  at::Tensor flat;                   // [numel] over the unit's storage
};

class ParamUnits {
 public:
  // `groups` groups, added with AddGroup (each once, in any order).
  ParamUnits(std::vector<at::Tensor>& params, size_t groups, int64_t persistence_threshold,
             const FlatPartition& layout, at::Tensor owned);
  // Group g's parameters (indices into params, a block's or everything outside the blocks):
  // takes over their memory — each becomes a view into its unit, this rank's part is copied into
  // `owned` (P elements, allocated by the caller) and the unit released unless persistent. Only
  // one group's parameters are held twice at a time.
  void AddGroup(size_t g, const std::vector<size_t>& indices);

  // Unit of group g's partitioned (non-persistent) parameters; -1 when it has none.
  int PartitionedUnit(size_t group) const { return partitioned_of_group_[group]; }
  void Gather(Communicator& comm, int unit);
  void Release(int unit);
  // Broadcasts the persistent units again (their values change at every optimizer step).
  void RefreshPersistent(Communicator& comm);
  const at::Tensor& Owned() const { return owned_; }
  int64_t Numel(int unit) const { return unit < 0 ? 0 : units_[static_cast<size_t>(unit)].numel; }
  size_t size() const { return units_.size(); }

 private:
  void Fill(Communicator& comm, ParamUnit& unit);

  std::vector<at::Tensor>& params_;
  FlatPartition layout_;
  at::Tensor owned_;
  std::vector<ParamUnit> units_;
  std::vector<int> partitioned_of_group_;
  int64_t persistence_threshold_ = 0;
};

}  // namespace memsweep::sharding
