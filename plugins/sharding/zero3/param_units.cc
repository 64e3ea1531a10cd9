#include "param_units.h"

#include <c10/core/CPUAllocator.h>
#include <torch/autograd.h>
#include <torch/utils.h>

#include <algorithm>

namespace memsweep::sharding {
namespace {

// Fresh memory for a released storage, from the allocator that made it (the tracking allocator).
void Materialize(const at::Tensor& flat) {
  const c10::Storage& storage = flat.storage();
  const size_t nbytes = static_cast<size_t>(flat.numel() * flat.element_size());
  storage.set_data_ptr_noswap(storage.allocator()->allocate(nbytes));
  storage.set_nbytes(nbytes);
}

void Dematerialize(const at::Tensor& flat) {
  const c10::Storage& storage = flat.storage();
  storage.set_data_ptr_noswap(storage.allocator()->allocate(0));
  storage.set_nbytes(0);
}

}  // namespace

ParamUnits::ParamUnits(std::vector<at::Tensor>& params, size_t groups,
                       int64_t persistence_threshold, const FlatPartition& layout, at::Tensor owned)
    : params_(params),
      layout_(layout),
      owned_(std::move(owned)),
      partitioned_of_group_(groups, -1),
      persistence_threshold_(persistence_threshold) {}

void ParamUnits::AddGroup(size_t g, const std::vector<size_t>& indices) {
  torch::NoGradGuard no_grad;
  ParamUnit partitioned, persistent;
  persistent.persistent = true;
  for (size_t index : indices) {
    ParamUnit& unit = params_[index].numel() < persistence_threshold_ ? persistent : partitioned;
    unit.params.push_back(index);
    unit.offsets.push_back(unit.numel);
    unit.numel += params_[index].numel();
  }
  if (!partitioned.params.empty()) partitioned_of_group_[g] = static_cast<int>(units_.size());
  for (ParamUnit* unit : {&partitioned, &persistent}) {
    if (unit->params.empty()) continue;
    // One unit at a time: the model's own copy of these parameters is freed by set_data.
    unit->flat = at::empty({unit->numel}, params_[unit->params.front()].options());
    for (size_t i = 0; i < unit->params.size(); ++i) {
      at::Tensor& p = params_[unit->params[i]];
      CopyIntoPartition(p, layout_.offsets[unit->params[i]], layout_, owned_);
      at::Tensor view = unit->flat.narrow(0, unit->offsets[i], p.numel()).view(p.sizes());
      view.copy_(p);
      p.set_data(view);
    }
    unit->gathered = true;
    units_.push_back(std::move(*unit));
    if (!units_.back().persistent) Release(static_cast<int>(units_.size()) - 1);
  }
}

void ParamUnits::Fill(Communicator& comm, ParamUnit& unit) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < unit.params.size(); ++i) {
    const int64_t global = layout_.offsets[unit.params[i]];
    const int64_t n = params_[unit.params[i]].numel();
    for (int r = 0; r < layout_.world_size; ++r) {
      const int64_t begin = layout_.Begin(r);
      const int64_t lo = std::max(global, begin), hi = std::min(global + n, begin + layout_.partition);
      if (lo >= hi) continue;
      at::Tensor part = unit.flat.narrow(0, unit.offsets[i] + (lo - global), hi - lo);
      if (r == layout_.rank) part.copy_(owned_.narrow(0, lo - begin, hi - lo));
      comm.Broadcast(part, r);
    }
  }
}

void ParamUnits::Gather(Communicator& comm, int index) {
  if (index < 0) return;
  ParamUnit& unit = units_[static_cast<size_t>(index)];
  if (unit.gathered) return;
  Materialize(unit.flat);
  unit.gathered = true;
  Fill(comm, unit);
}

void ParamUnits::Release(int index) {
  if (index < 0) return;
  ParamUnit& unit = units_[static_cast<size_t>(index)];
  if (!unit.gathered || unit.persistent) return;
  Dematerialize(unit.flat);
  unit.gathered = false;
}

void ParamUnits::RefreshPersistent(Communicator& comm) {
  for (ParamUnit& unit : units_) {
    if (unit.persistent) Fill(comm, unit);
  }
}

}  // namespace memsweep::sharding
