#include "core/comm/nccl_communicator.h"

#include <stdexcept>

#ifndef MEMSWEEP_NCCL
#define MEMSWEEP_NCCL 0
#endif

#if MEMSWEEP_NCCL
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL 1
#endif
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace memsweep::dist {

#if MEMSWEEP_NCCL
namespace {

using Clock = std::chrono::steady_clock;

int64_t Bytes(const at::Tensor& t) { return static_cast<int64_t>(t.numel() * t.element_size()); }

class NcclCommunicator final : public CountingCommunicator {
 public:
  NcclCommunicator(c10::intrusive_ptr<c10d::ProcessGroupNCCL> group, int rank, int world,
                   c10::Device device)
      : group_(std::move(group)), rank_(rank), world_(world), device_(device) {}
  int Rank() const override { return rank_; }
  int WorldSize() const override { return world_; }
  CommCounters Counters() const override { return counters_; }

  void AllReduceSum(at::Tensor& tensor) override {
    at::Tensor staged = Staged(tensor, /*widen_bf16=*/true);
    std::vector<at::Tensor> tensors{staged};
    Run(Bytes(staged), [&] { return group_->allreduce(tensors); });
    CopyBack(staged, tensor);
  }
  void Broadcast(at::Tensor& tensor, int root) override {
    at::Tensor staged = Staged(tensor, false);
    std::vector<at::Tensor> tensors{staged};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    Run(rank_ == root ? Bytes(tensor) : 0, [&] { return group_->broadcast(tensors, options); });
    CopyBack(staged, tensor);
  }
  void AllGather(const at::Tensor& input, std::vector<at::Tensor>& outputs) override {
    std::vector<std::vector<at::Tensor>> out(1);
    for (const at::Tensor& o : outputs) out[0].push_back(Staged(o, false));
    std::vector<at::Tensor> in{Staged(input, false)};
    Run(Bytes(input), [&] { return group_->allgather(out, in); });
    for (size_t i = 0; i < outputs.size(); ++i) CopyBack(out[0][i], outputs[i]);
  }
  void AllToAll(at::Tensor& output, at::Tensor& input) override {
    std::vector<int64_t> equal_splits;  // empty: equal chunks along dim 0
    std::vector<int64_t> same_splits;
    at::Tensor out = Staged(output, false), in = Staged(input, false);
    const int64_t sent = Bytes(input) / world_ * (world_ - 1);
    Run(sent, [&] { return group_->alltoall_base(out, in, equal_splits, same_splits); });
    CopyBack(out, output);
  }
  void Barrier() override {
    Run(0, [&] { return group_->barrier(); });
  }
  void ReduceSum(at::Tensor& tensor, int root) override {
    at::Tensor staged = Staged(tensor, /*widen_bf16=*/true);
    std::vector<at::Tensor> tensors{staged};
    c10d::ReduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    options.rootRank = root;
    Run(rank_ == root ? 0 : Bytes(staged), [&] { return group_->reduce(tensors, options); });
    CopyBack(staged, tensor);
  }

 private:
  // The tensor NCCL works on: on this rank's GPU, contiguous, fp32 for a bf16 sum.
  at::Tensor Staged(const at::Tensor& t, bool widen_bf16) const {
    at::Tensor s = t.device() == device_ ? t : t.to(device_);
    if (widen_bf16 && s.scalar_type() == at::kBFloat16) s = s.to(at::kFloat);
    return s.is_contiguous() ? s : s.contiguous();
  }
  static void CopyBack(const at::Tensor& staged, at::Tensor& original) {
    if (!staged.is_same(original)) original.copy_(staged);
  }
  template <typename Start>
  void Run(int64_t bytes, Start&& start) {
    const c10::DeviceGuard guard(device_);
    // Kernels queued before the call finish first, so the time is the collective's own.
    const auto* device = c10::impl::getDeviceGuardImpl(device_.type());
    device->synchronizeDevice(device_.index());
    const auto begin = Clock::now();
    c10::intrusive_ptr<c10d::Work> work = start();
    work->wait();
    device->synchronizeDevice(device_.index());
    counters_.seconds += std::chrono::duration<double>(Clock::now() - begin).count();
    counters_.bytes += bytes;
    ++counters_.calls;
  }

  c10::intrusive_ptr<c10d::ProcessGroupNCCL> group_;
  int rank_, world_;
  c10::Device device_;
  CommCounters counters_;
};

}  // namespace
#endif

std::unique_ptr<CountingCommunicator> MakeNcclCommunicator(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int world_size, c10::Device device,
    std::chrono::milliseconds timeout) {
#if MEMSWEEP_NCCL
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  auto group_store = c10::make_intrusive<c10d::PrefixStore>("nccl", store);
  const c10::DeviceGuard guard(device);
  auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(group_store, rank, world_size, options);
  return std::make_unique<NcclCommunicator>(std::move(group), rank, world_size, device);
#else
  (void)store, (void)rank, (void)world_size, (void)device, (void)timeout;
  throw std::runtime_error(
      "this memsweep was built without NCCL (nccl.h was not found beside LibTorch), so ranks "
      "cannot run on CUDA devices; use [device] type = \"cpu\" for multi-rank runs");
#endif
}

}  // namespace memsweep::dist
