// FlatPartition: the ZeRO plugins' view of the model as one flat fp32 vector of Ψ elements,
// padded to N·P and split into N equal partitions of P elements; rank r owns [r·P, (r+1)·P).
// Each parameter's storage becomes a view into one flat buffer (FlattenParameters), so that
// partitions, buckets and gathers are plain contiguous slices.
//
//   FlatPartition layout(model->parameters(), comm->WorldSize(), comm->Rank());
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

// The ZeRO plugins keep parameters, gradients and AdamW state as fp32 flat buffers and own the
// update; bf16 parameters (precision/bf16, whose fp32 master copies would be bypassed) are
// refused with what to use instead, rather than trained wrongly.
inline void RequireFp32Parameters(const std::vector<at::Tensor>& params, const char* plugin) {
  for (const at::Tensor& p : params) {
    if (p.scalar_type() != at::kFloat) {
      throw std::invalid_argument(
          std::string(plugin) + " needs fp32 parameters, found " +
          std::string(c10::toString(p.scalar_type())) +
          " (precision/bf16 keeps bf16 parameters with fp32 masters, which this sharding "
          "plugin does not shard yet); use precision \"fp32\" or \"bf16-autocast\" with it");
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

// Bucket length in elements of a flat range (at least 1).
inline int64_t BucketElements(int64_t bucket_size, int64_t length) {
  return std::max<int64_t>(1, std::min(bucket_size, length));
}

}  // namespace memsweep::sharding
