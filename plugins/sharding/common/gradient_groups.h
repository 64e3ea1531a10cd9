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
#include <torch/autograd.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "flat_partition.h"
#include "memsweep/collectives.h"

namespace memsweep::sharding {

class GradientGroups {
 public:
  GradientGroups() = default;
  // groups[g]: indices into params of group g's parameters; every parameter in one group.
  GradientGroups(const std::vector<at::Tensor>& params,
                 const std::vector<std::vector<size_t>>& groups, const FlatPartition& layout)
      : layout_(layout) {
    for (std::vector<size_t> members : groups) {
      std::sort(members.begin(), members.end(), [&](size_t a, size_t b) {
        return layout.offsets[a] < layout.offsets[b];
      });
      Group group;
      for (size_t i : members) {
        const int64_t flat = layout.offsets[i];
        const int64_t n = params[i].numel();
        group.params.push_back(i);
        group.buffer_offsets.push_back(group.numel);
        // Parameters adjacent in the flat vector share one range.
        if (!group.ranges.empty() && group.ranges.back().flat + group.ranges.back().length == flat) {
          group.ranges.back().length += n;
        } else {
          group.ranges.push_back({group.numel, flat, n});
        }
        group.numel += n;
      }
      groups_.push_back(std::move(group));
    }
  }

  size_t size() const { return groups_.size(); }

  // Starts a backward: every group is to be reduced once more.
  void BeginBackward() {
    for (Group& g : groups_) g.reduced = false;
  }

  // Gives group g its buffer (before any of its gradients exist: autograd then accumulates into it
  // in place, and the group's gradients cost one buffer, not one tensor per parameter plus a copy).
  void Attach(std::vector<at::Tensor>& params, size_t g) {
    Group& group = groups_[g];
    if (group.buffer.defined() || group.reduced) return;
    group.buffer = at::zeros({group.numel}, params[group.params.front()].options());
    for (size_t k = 0; k < group.params.size(); ++k) {
      at::Tensor& p = params[group.params[k]];
      at::Tensor slice = group.buffer.narrow(0, group.buffer_offsets[k], p.numel()).view(p.sizes());
      // A gradient autograd made before the attach (none in the engines' order) is kept.
      if (p.grad().defined()) slice.copy_(p.grad());
      p.mutable_grad() = slice;
    }
  }

  // Adds the sum over ranks of group g's gradient into `owned` (this rank's partition, P
  // elements), detaches the group's gradients and frees its buffer. Once per backward. A group
  // that was never attached is reduced from the gradients autograd made, parameter by parameter
  // (zeros for a parameter without one: every rank must issue the same collectives).
  void Reduce(std::vector<at::Tensor>& params, size_t g, Communicator& comm, at::Tensor& owned,
              int64_t bucket) {
    Group& group = groups_[g];
    if (group.reduced) return;
    torch::NoGradGuard no_grad;
    if (group.buffer.defined()) {
      for (const Range& range : group.ranges) ReduceRange(group.buffer, range, comm, owned, bucket);
    } else {
      for (size_t i : group.params) {
        const at::Tensor& p = params[i];
        at::Tensor grad = p.grad().defined() ? p.grad().contiguous().view({-1})
                                             : at::zeros({p.numel()}, p.options());
        ReduceRange(grad, {0, layout_.offsets[i], p.numel()}, comm, owned, bucket);
      }
    }
    for (size_t i : group.params) params[i].mutable_grad() = at::Tensor();
    group.buffer = at::Tensor();
    group.reduced = true;
  }

  void ReduceRemaining(std::vector<at::Tensor>& params, Communicator& comm, at::Tensor& owned,
                       int64_t bucket) {
    for (size_t g = 0; g < groups_.size(); ++g) Reduce(params, g, comm, owned, bucket);
  }

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
                   int64_t bucket) const {
    for (int r = 0; r < layout_.world_size; ++r) {
      const int64_t lo = std::max(range.flat, layout_.Begin(r));
      const int64_t hi = std::min(range.flat + range.length, layout_.Begin(r) + layout_.partition);
      const int64_t step = BucketElements(bucket, hi - lo);
      for (int64_t begin = lo; begin < hi; begin += step) {
        const int64_t length = std::min(step, hi - begin);
        at::Tensor piece = buffer.narrow(0, range.buffer + (begin - range.flat), length);
        comm.ReduceSum(piece, r);
        if (r == layout_.rank) owned.narrow(0, begin - layout_.Begin(r), length).add_(piece);
      }
    }
  }

  FlatPartition layout_;
  std::vector<Group> groups_;
};

}  // namespace memsweep::sharding
