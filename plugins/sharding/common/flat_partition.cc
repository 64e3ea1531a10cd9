#include "flat_partition.h"

#include <torch/autograd.h>
#include <torch/utils.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace memsweep::sharding {

namespace {

void RequireDtype(const at::Tensor& p, at::ScalarType dtype, const char* plugin) {
  if ((p.scalar_type() != at::kFloat && p.scalar_type() != at::kBFloat16) ||
      p.scalar_type() != dtype) {
    throw std::invalid_argument(
        std::string(plugin) + " needs parameters all fp32 or all bf16, found " +
        std::string(c10::toString(dtype)) + " and " + std::string(c10::toString(p.scalar_type())) +
        "; use precision \"fp32\", \"bf16\" or \"bf16-autocast\" with it");
  }
}

}  // namespace

void RequireFlatDtype(const std::vector<at::Tensor>& params, const char* plugin) {
  for (const at::Tensor& p : params) RequireDtype(p, params.front().scalar_type(), plugin);
}

void RequireFlatDtype(const std::vector<at::Tensor>& params, const std::vector<size_t>& indices,
                      at::ScalarType dtype, const char* plugin) {
  for (size_t i : indices) RequireDtype(params[i], dtype, plugin);
}

FlatPartition::FlatPartition(const std::vector<at::Tensor>& params, int world, int rank_)
    : world_size(world), rank(rank_) {
  for (const at::Tensor& p : params) {
    offsets.push_back(total);
    total += p.numel();
  }
  partition = (total + world - 1) / world;
}

at::Tensor FlattenParameters(std::vector<at::Tensor>& params, const FlatPartition& layout) {
  at::Tensor flat = at::zeros({layout.Padded()}, params.front().options());
  std::vector<size_t> all(params.size());
  for (size_t i = 0; i < params.size(); ++i) all[i] = i;
  FlattenInto(params, all, layout, flat);
  return flat;
}

void FlattenInto(std::vector<at::Tensor>& params, const std::vector<size_t>& indices,
                 const FlatPartition& layout, at::Tensor& flat) {
  torch::NoGradGuard no_grad;
  for (size_t i : indices) {
    at::Tensor view = flat.narrow(0, layout.offsets[i], params[i].numel()).view(params[i].sizes());
    view.copy_(params[i]);
    params[i].set_data(view);
  }
}

void AttachGradients(std::vector<at::Tensor>& params, const at::Tensor& flat_grad,
                     const FlatPartition& layout) {
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].mutable_grad() =
        flat_grad.narrow(0, layout.offsets[i], params[i].numel()).view(params[i].sizes());
  }
}

void CopyIntoPartition(const at::Tensor& value, int64_t flat_offset,
                       const FlatPartition& layout, at::Tensor& owned) {
  const int64_t begin = layout.Begin(layout.rank);
  const int64_t lo = std::max(flat_offset, begin);
  const int64_t hi = std::min(flat_offset + value.numel(), begin + layout.partition);
  if (lo >= hi) return;
  owned.narrow(0, lo - begin, hi - lo).copy_(value.reshape({-1}).narrow(0, lo - flat_offset, hi - lo));
}

void AdoptMasters(const std::vector<at::Tensor>& masters,
                  const std::vector<at::Tensor>& params, const FlatPartition& layout,
                  at::Tensor& master) {
  torch::NoGradGuard no_grad;
  if (masters.size() != params.size()) {
    throw std::invalid_argument("the precision slot handed over " + std::to_string(masters.size()) +
                                " tensors to update for " + std::to_string(params.size()) +
                                " parameters");
  }
  master.zero_();
  for (size_t i = 0; i < params.size(); ++i) {
    if (masters[i].scalar_type() != at::kFloat || masters[i].numel() != params[i].numel()) {
      throw std::invalid_argument("the precision slot's master copy of parameter " +
                                  std::to_string(i) + " is not an fp32 tensor of its size");
    }
    CopyIntoPartition(masters[i], layout.offsets[i], layout, master);
  }
}

int64_t BucketElements(int64_t bucket_size, int64_t length) {
  return std::max<int64_t>(1, std::min(bucket_size, length));
}

}  // namespace memsweep::sharding
