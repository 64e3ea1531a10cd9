#include "core/estimate/meta_communicator.h"

#include <ATen/ATen.h>

#include <vector>

#include "core/comm/gloo_staging.h"

namespace memsweep::estimate {
namespace {

int64_t Bytes(const at::Tensor& t) { return static_cast<int64_t>(t.numel() * t.element_size()); }

// c10d's newLikeFlat: one buffer holding `n` tensors shaped like `t`, stacked along a new dim 0.
at::Tensor StackedLike(const at::Tensor& t, int64_t n) {
  std::vector<int64_t> sizes{n};
  for (int64_t s : t.sizes()) sizes.push_back(s);
  return at::empty(sizes, t.options());
}

// Gloo's transport without the wire (see the header).
class MetaGlooCommunicator final : public dist::GlooStagedCommunicator {
 public:
  using GlooStagedCommunicator::GlooStagedCommunicator;

 protected:
  void SendAllReduce(at::Tensor&) override {}
  void SendBroadcast(at::Tensor&, int) override {}
  void SendAllGather(std::vector<at::Tensor>& outputs, const at::Tensor& input) override {
    CopyOut(StackedLike(input, static_cast<int64_t>(outputs.size())), outputs);
  }
  void SendAllToAll(at::Tensor&, at::Tensor&) override {}
  void SendBarrier() override {}
  void SendReduce(at::Tensor&, int) override {}
  void SendGather(std::vector<at::Tensor>& outputs, const at::Tensor& input, int) override {
    if (!outputs.empty()) CopyOut(StackedLike(input, static_cast<int64_t>(outputs.size())), outputs);
  }

 private:
  static void CopyOut(const at::Tensor& stacked, std::vector<at::Tensor>& outputs) {
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i].copy_(stacked[static_cast<int64_t>(i)]);
  }
};

// memsweep's NCCL communicator without the wire (see the header).
class MetaNcclCommunicator final : public dist::CountingCommunicator {
 public:
  MetaNcclCommunicator(int rank, int world) : rank_(rank), world_(world) {}
  int Rank() const override { return rank_; }
  int WorldSize() const override { return world_; }
  dist::CommCounters Counters() const override { return counters_; }

  void AllReduceSum(at::Tensor& tensor) override {
    at::Tensor staged = Staged(tensor, /*widen_bf16=*/true);
    Count(Bytes(staged));
    CopyBack(staged, tensor);
  }
  void Broadcast(at::Tensor& tensor, int root) override {
    at::Tensor staged = Staged(tensor, false);
    Count(rank_ == root ? Bytes(tensor) : 0);
    CopyBack(staged, tensor);
  }
  void AllGather(const at::Tensor& input, std::vector<at::Tensor>& outputs) override {
    std::vector<at::Tensor> staged;
    for (const at::Tensor& o : outputs) staged.push_back(Staged(o, false));
    const at::Tensor in = Staged(input, false);
    Count(Bytes(input));
    const at::Tensor stacked = StackedLike(in, static_cast<int64_t>(staged.size()));
    for (size_t i = 0; i < staged.size(); ++i) {
      staged[i].copy_(stacked[static_cast<int64_t>(i)]);
      CopyBack(staged[i], outputs[i]);
    }
  }
  void AllToAll(at::Tensor& output, at::Tensor& input) override {
    at::Tensor out = Staged(output, false), in = Staged(input, false);
    Count(Bytes(input) / world_ * (world_ - 1));
    CopyBack(out, output);
  }
  void Barrier() override {
    const at::Tensor flag = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(at::kMeta));
    Count(0);
  }
  void ReduceSum(at::Tensor& tensor, int root) override {
    at::Tensor staged = Staged(tensor, /*widen_bf16=*/true);
    Count(rank_ == root ? 0 : Bytes(staged));
    CopyBack(staged, tensor);
  }

 private:
  static at::Tensor Staged(const at::Tensor& t, bool widen_bf16) {
    at::Tensor s = t;
    if (widen_bf16 && s.scalar_type() == at::kBFloat16) s = s.to(at::kFloat);
    return s.is_contiguous() ? s : s.contiguous();
  }
  static void CopyBack(const at::Tensor& staged, at::Tensor& original) {
    if (!staged.is_same(original)) original.copy_(staged);
  }
  void Count(int64_t bytes) {
    counters_.bytes += bytes;
    ++counters_.calls;
  }

  int rank_, world_;
  dist::CommCounters counters_;
};

}  // namespace

std::unique_ptr<dist::CountingCommunicator> MakeMetaCommunicator(int rank, int world, bool cuda) {
  if (cuda) return std::make_unique<MetaNcclCommunicator>(rank, world);
  return std::make_unique<MetaGlooCommunicator>(rank, world);
}

}  // namespace memsweep::estimate
