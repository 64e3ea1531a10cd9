// FlatPartition: the ZeRO plugins' view of the model as one flat vector of Ψ elements (fp32, or
// bf16 with fp32 master partitions), padded to N·P and split into N equal partitions of P
// elements; rank r owns [r·P, (r+1)·P).
// Each parameter's storage becomes a view into one flat buffer (FlattenParameters), so that
// partitions, buckets and gathers are plain contiguous slices.
//
//   FlatPartition layout(model->Parameters(), comm->WorldSize(), comm->Rank());
//   at::Tensor flat = FlattenParameters(params, layout);   // params now view `flat`
#pragma once

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace memsweep::sharding {

// The ZeRO plugins keep the parameters (and gradients) in one flat buffer of the parameters'
// dtype: fp32, or bf16 under precision/bf16, whose fp32 master copies the plugins then take over
// as partitions (AdoptMasters). Anything else is refused with what to use instead.
inline void RequireFlatDtype(const std::vector<at::Tensor>& params, const char* plugin) {
  const at::ScalarType dtype = params.front().scalar_type();
  for (const at::Tensor& p : params) {
    if ((p.scalar_type() != at::kFloat && p.scalar_type() != at::kBFloat16) ||
        p.scalar_type() != dtype) {
      throw std::invalid_argument(
          std::string(plugin) + " needs parameters all fp32 or all bf16, found " +
          std::string(c10::toString(dtype)) + " and " +
          std::string(c10::toString(p.scalar_type())) +
          "; use precision \"fp32\", \"bf16\" or \"bf16-autocast\" with it");
    }
  }
}

struct FlatPartition {
  FlatPartition() = default;
  FlatPartition(const std::vector<at::Tensor>& params, int world, int rank_)
      : world_size(world), rank(rank_) {
    for (const at::Tensor& p : params) {
      offsets.push_back(total);
      total += p.numel();
    }
    partition = (total + world - 1) / world;
  }
  int64_t Padded() const { return partition * world_size; }
  int64_t Begin(int r) const { return partition * r; }

  int world_size = 1;
  int rank = 0;
  int64_t total = 0;      // Ψ: elements of all parameters
  int64_t partition = 0;  // P: elements each rank owns (the last one includes the padding)
  std::vector<int64_t> offsets;  // of each parameter in the flat vector
};

// Copies every parameter into one flat buffer (zero padding at the end) and points each
// parameter at its slice; the parameters' previous storages are freed.
inline at::Tensor FlattenParameters(std::vector<at::Tensor>& params, const FlatPartition& layout) {
  torch::NoGradGuard no_grad;
  at::Tensor flat = at::zeros({layout.Padded()}, params.front().options());
  for (size_t i = 0; i < params.size(); ++i) {
    at::Tensor view = flat.narrow(0, layout.offsets[i], params[i].numel()).view(params[i].sizes());
    view.copy_(params[i]);
    params[i].set_data(view);
  }
  return flat;
}

// Points each parameter's .grad at its slice of `flat_grad`, so that backward accumulates
// there in place (autograd adds into an existing .grad).
inline void AttachGradients(std::vector<at::Tensor>& params, const at::Tensor& flat_grad,
                            const FlatPartition& layout) {
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].mutable_grad() =
        flat_grad.narrow(0, layout.offsets[i], params[i].numel()).view(params[i].sizes());
  }
}

// Copies the part of `value` (a tensor of the flat vector, starting at element `flat_offset`)
// that falls in this rank's partition into `owned` (P elements), converting its dtype.
inline void CopyIntoPartition(const at::Tensor& value, int64_t flat_offset,
                              const FlatPartition& layout, at::Tensor& owned) {
  const int64_t begin = layout.Begin(layout.rank);
  const int64_t lo = std::max(flat_offset, begin);
  const int64_t hi = std::min(flat_offset + value.numel(), begin + layout.partition);
  if (lo >= hi) return;
  owned.narrow(0, lo - begin, hi - lo).copy_(value.reshape({-1}).narrow(0, lo - flat_offset, hi - lo));
}

// This rank's partition of the fp32 master copies the precision slot handed over (one per
// parameter, same order), written into `master` (P fp32 elements, zero padding). The full copies
// can be freed afterwards: only the partition is kept (the master weights' share of K·Ψ/N).
inline void AdoptMasters(const std::vector<at::Tensor>& masters,
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

// Bucket length in elements of a flat range (at least 1).
inline int64_t BucketElements(int64_t bucket_size, int64_t length) {
  return std::max<int64_t>(1, std::min(bucket_size, length));
}

}  // namespace memsweep::sharding
