#include "gradient_groups.h"

#include <torch/autograd.h>
#include <torch/utils.h>

#include <algorithm>
#include <utility>

namespace memsweep::sharding {

GradientGroups::GradientGroups(const std::vector<at::Tensor>& params,
                               const std::vector<std::vector<size_t>>& groups,
                               const FlatPartition& layout)
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

void GradientGroups::BeginBackward() {
  for (Group& g : groups_) g.reduced = false;
}

void GradientGroups::Attach(std::vector<at::Tensor>& params, size_t g) {
  Group& group = groups_[g];
  // A group without a trainable parameter (a frozen block) has nothing to attach.
  if (group.params.empty() || group.buffer.defined() || group.reduced) return;
  group.buffer = at::zeros({group.numel}, params[group.params.front()].options());
  for (size_t k = 0; k < group.params.size(); ++k) {
    at::Tensor& p = params[group.params[k]];
    at::Tensor slice = group.buffer.narrow(0, group.buffer_offsets[k], p.numel()).view(p.sizes());
    // A gradient autograd made before the attach (none in the engines' order) is kept.
    if (p.grad().defined()) slice.copy_(p.grad());
    p.mutable_grad() = slice;
  }
}

void GradientGroups::Reduce(std::vector<at::Tensor>& params, size_t g, Communicator& comm,
                            at::Tensor& owned, int64_t bucket) {
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

void GradientGroups::ReduceRemaining(std::vector<at::Tensor>& params, Communicator& comm,
                                     at::Tensor& owned, int64_t bucket) {
  for (size_t g = 0; g < groups_.size(); ++g) Reduce(params, g, comm, owned, bucket);
}

void GradientGroups::ReduceRange(at::Tensor& buffer, const Range& range, Communicator& comm,
                                 at::Tensor& owned, int64_t bucket) const {
  for (int r = 0; r < layout_.world_size; ++r) {
    const int64_t lo = std::max(range.flat, layout_.Begin(r));
    const int64_t hi = std::min(range.flat + range.length, layout_.Begin(r) + layout_.partition);
    const int64_t step = BucketElements(bucket, hi - lo);
    for (int64_t begin = lo; begin < hi; begin += step) {
      const int64_t length = std::min(step, hi - begin);
      at::Tensor piece = buffer.narrow(0, range.buffer + (begin - range.flat), length);
      comm.ReduceSum(piece, r);
      // Widened explicitly (bf16 gradients into fp32 owned ones): `add_` would widen the piece
      // into a temporary that LibTorch's CPU kernel allocates and its meta kernel does not.
      if (r == layout_.rank) {
        owned.narrow(0, begin - layout_.Begin(r), length).add_(piece.to(owned.scalar_type()));
      }
    }
  }
}

}  // namespace memsweep::sharding
