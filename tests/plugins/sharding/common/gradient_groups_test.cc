// GradientGroups (plugins/sharding/common/gradient_groups.h): each part of a group's gradient
// goes to the rank that owns it, bucket by bucket, and arrives in that rank's partition; buffers
// and gradients are gone afterwards. A recording communicator stands in for N ranks that all
// hold the same gradient (its ReduceSum multiplies by N at the root).
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "sharding/common/gradient_groups.h"
#include "sharding/common/solo_communicator.h"

namespace memsweep::sharding {
namespace {

class RecordingCommunicator final : public Communicator {
 public:
  RecordingCommunicator(int rank, int world) : rank_(rank), world_(world) {}
  int Rank() const override { return rank_; }
  int WorldSize() const override { return world_; }
  void AllReduceSum(at::Tensor&) override { FAIL() << "not expected"; }
  void Broadcast(at::Tensor&, int) override { FAIL() << "not expected"; }
  void AllGather(const at::Tensor&, std::vector<at::Tensor>&) override { FAIL() << "not expected"; }
  void AllToAll(at::Tensor&, at::Tensor&) override { FAIL() << "not expected"; }
  void Barrier() override {}
  void ReduceSum(at::Tensor& tensor, int root) override {
    calls.emplace_back(tensor.numel(), root);
    if (root == rank_) tensor.mul_(world_);
  }
  std::vector<std::pair<int64_t, int>> calls;  // (elements, root)

 private:
  int rank_, world_;
};

std::vector<at::Tensor> Params(const std::vector<int64_t>& sizes) {
  std::vector<at::Tensor> params;
  for (int64_t n : sizes) params.push_back(at::zeros({n}).requires_grad_());
  return params;
}

// Parameters of 5, 7 and 4 elements: flat ranges [0,5), [5,12), [12,16); two ranks own [0,8) and
// [8,16). Group 0 = parameters 0 and 2 (not adjacent), group 1 = parameter 1 (spans both).
TEST(GradientGroupsTest, EachPartGoesToItsOwnerInBuckets) {
  std::vector<at::Tensor> params = Params({5, 7, 4});
  const FlatPartition layout(params, 2, 1);
  GradientGroups groups(params, {{0, 2}, {1}}, layout);
  RecordingCommunicator comm(/*rank=*/1, /*world=*/2);
  at::Tensor owned = at::zeros({layout.partition});

  groups.BeginBackward();
  groups.Attach(params, 1);
  ASSERT_TRUE(params[1].grad().defined());
  params[1].mutable_grad().copy_(at::arange(1, 8, at::kFloat));  // what backward would add
  groups.Reduce(params, 1, comm, owned, /*bucket=*/2);

  // [5,8) to rank 0 in buckets of 2 + 1, [8,12) to rank 1 in 2 + 2.
  const std::vector<std::pair<int64_t, int>> expected{{2, 0}, {1, 0}, {2, 1}, {2, 1}};
  EXPECT_EQ(comm.calls, expected);
  // Rank 1 receives parameter 1's elements 3..6 (values 4..7), summed over two ranks.
  EXPECT_TRUE(owned.narrow(0, 0, 4).equal(at::tensor({8.f, 10.f, 12.f, 14.f})));
  EXPECT_TRUE(owned.narrow(0, 4, 4).equal(at::zeros({4})));
  EXPECT_FALSE(params[1].grad().defined()) << "the group's gradients are released";

  // Reduced once per backward: a second call (the end-of-backward sweep) sends nothing.
  comm.calls.clear();
  groups.Reduce(params, 1, comm, owned, 2);
  EXPECT_TRUE(comm.calls.empty());

  // Group 0 was never attached: reduced from the gradients autograd made; a parameter without
  // one still takes part (zeros), so every rank issues the same collectives.
  params[2].mutable_grad() = at::full({4}, 3.f);
  groups.ReduceRemaining(params, comm, owned, /*bucket=*/100);
  const std::vector<std::pair<int64_t, int>> rest{{5, 0}, {4, 1}};
  EXPECT_EQ(comm.calls, rest);
  EXPECT_TRUE(owned.narrow(0, 4, 4).equal(at::full({4}, 6.f)));
  EXPECT_FALSE(params[2].grad().defined());

  // The next backward reduces every group again.
  comm.calls.clear();
  groups.BeginBackward();
  groups.ReduceRemaining(params, comm, owned, 100);
  EXPECT_EQ(comm.calls.size(), 4u);  // group 0: [0,5) and [12,16); group 1: [5,8) and [8,12)
}

// An attached buffer is where autograd accumulates: a real backward adds into the views.
TEST(GradientGroupsTest, BackwardAccumulatesIntoTheAttachedBuffer) {
  std::vector<at::Tensor> params = Params({3, 2});
  const FlatPartition layout(params, 1, 0);
  GradientGroups groups(params, {{0, 1}}, layout);
  SoloCommunicator comm;
  at::Tensor owned = at::zeros({layout.partition});
  groups.BeginBackward();
  groups.Attach(params, 0);
  const at::Tensor view = params[0].grad();
  (params[0].sum() * 2 + params[1].sum() * 3).backward();
  (params[0].sum() * 2).backward();  // a second micro-batch accumulates
  EXPECT_TRUE(params[0].grad().is_same(view)) << "accumulated in place, not replaced";
  groups.Reduce(params, 0, comm, owned, 1 << 20);
  EXPECT_TRUE(owned.equal(at::tensor({4.f, 4.f, 4.f, 3.f, 3.f})));
}

}  // namespace
}  // namespace memsweep::sharding
