// GradientGroups: ZeRO-2/3 gradients reduced group by group during backward, so that a rank never
// holds a full-size gradient (4Ψ for fp32), only its partition plus the group in flight.
//
// A group is a set of parameters — a decoder block's, or those outside the blocks (embedding,
// final norm, LM head). Attach(g) gives the group one zeroed buffer and points each parameter's
// .grad at its slice (autograd accumulates there in place); Reduce(g) sends every part of the
// buffer to the rank that owns it in the flat partition (flat_partition.h) — one ReduceSum per
// owner and bucket (the communicator has no reduce_scatter) — adds the sums that arrive at
// this rank into its gradient partition, and frees the buffer. The ZeRO engines attach a block's
// group when its backward begins and reduce it when its backward ends (block_backward_hooks.h);
// whatever was not reduced during a backward is reduced at its end, in group order, so that every
// rank issues the same collectives in the same order. The group outside the blocks is not attached:
// its gradients (LM head first, embedding last) are made by autograd as backward reaches them.
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "flat_partition.h"
#include "memsweep/collectives.h"

namespace memsweep::sharding {

class GradientGroups {
 public:
  GradientGroups() = default;
  // groups[g]: indices into params of group g's parameters; every parameter in one group.
  GradientGroups(const std::vector<at::Tensor>& params,
                 const std::vector<std::vector<size_t>>& groups, const FlatPartition& layout);

  size_t size() const { return groups_.size(); }

  // Starts a backward: every group is to be reduced once more.
  void BeginBackward();

  // Gives group g its buffer (before any of its gradients exist: autograd then accumulates into it
  // in place, and the group's gradients cost one buffer, not one tensor per parameter plus a copy).
  void Attach(std::vector<at::Tensor>& params, size_t g);

  // Adds the sum over ranks of group g's gradient into `owned` (this rank's partition, P
  // elements), detaches the group's gradients and frees its buffer. Once per backward. A group
  // that was never attached is reduced from the gradients autograd made, parameter by parameter
  // (zeros for a parameter without one: every rank must issue the same collectives).
  void Reduce(std::vector<at::Tensor>& params, size_t g, Communicator& comm, at::Tensor& owned,
              int64_t bucket);

  void ReduceRemaining(std::vector<at::Tensor>& params, Communicator& comm, at::Tensor& owned,
                       int64_t bucket);

 private:
  struct Range {
    int64_t buffer;  // offset in the group's buffer
    int64_t flat;    // offset in the flat parameter vector
    int64_t length;
  };
  struct Group {
    std::vector<size_t> params;
    std::vector<int64_t> buffer_offsets;
    std::vector<Range> ranges;
    int64_t numel = 0;
    at::Tensor buffer;
    bool reduced = false;
  };

  // The part of `range` in rank r's partition goes to rank r, bucket by bucket.
  void ReduceRange(at::Tensor& buffer, const Range& range, Communicator& comm, at::Tensor& owned,
                   int64_t bucket) const;

  FlatPartition layout_;
  std::vector<Group> groups_;
};

}  // namespace memsweep::sharding
