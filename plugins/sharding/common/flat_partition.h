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

#include <cstdint>
#include <vector>

namespace memsweep::sharding {

// The ZeRO plugins keep the parameters (and gradients) in one flat buffer of the parameters'
// dtype: fp32, or bf16 under precision/bf16, whose fp32 master copies the plugins then take over
// as partitions (AdoptMasters). Anything else is refused with what to use instead.
void RequireFlatDtype(const std::vector<at::Tensor>& params, const char* plugin);
// The parameters `indices` of `params` must have `dtype`, fp32 or bf16 (the same refusal).
void RequireFlatDtype(const std::vector<at::Tensor>& params, const std::vector<size_t>& indices,
                      at::ScalarType dtype, const char* plugin);

struct FlatPartition {
  FlatPartition() = default;
  FlatPartition(const std::vector<at::Tensor>& params, int world, int rank_);
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
at::Tensor FlattenParameters(std::vector<at::Tensor>& params, const FlatPartition& layout);
// The same for the parameters `indices` only, into `flat` (a model built group by group: the
// flat buffer exists from the first group on, each group is moved into it as it is built).
void FlattenInto(std::vector<at::Tensor>& params, const std::vector<size_t>& indices,
                 const FlatPartition& layout, at::Tensor& flat);

// Points each parameter's .grad at its slice of `flat_grad`, so that backward accumulates
// there in place (autograd adds into an existing .grad).
void AttachGradients(std::vector<at::Tensor>& params, const at::Tensor& flat_grad,
                     const FlatPartition& layout);

// Copies the part of `value` (a tensor of the flat vector, starting at element `flat_offset`)
// that falls in this rank's partition into `owned` (P elements), converting its dtype.
void CopyIntoPartition(const at::Tensor& value, int64_t flat_offset,
                       const FlatPartition& layout, at::Tensor& owned);

// This rank's partition of the fp32 master copies the precision slot handed over (one per
// parameter, same order), written into `master` (P fp32 elements, zero padding). The full copies
// can be freed afterwards: only the partition is kept (the master weights' share of K·Ψ/N).
void AdoptMasters(const std::vector<at::Tensor>& masters,
                  const std::vector<at::Tensor>& params, const FlatPartition& layout,
                  at::Tensor& master);

// Bucket length in elements of a flat range (at least 1).
int64_t BucketElements(int64_t bucket_size, int64_t length);

}  // namespace memsweep::sharding
