#include "core/dist/process_group.h"

// ProcessGroupGloo.hpp is only compiled in with USE_C10D_GLOO (set when LibTorch was built
// with Gloo, as Debian's is); its Gloo headers come from libgloo-dev.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <stdexcept>

namespace memsweep::dist {
namespace {

using Clock = std::chrono::steady_clock;

int64_t Bytes(const at::Tensor& t) { return static_cast<int64_t>(t.numel() * t.element_size()); }

class GlooCommunicator final : public CountingCommunicator {
 public:
  GlooCommunicator(c10::intrusive_ptr<c10d::ProcessGroupGloo> group, int rank, int world)
      : group_(std::move(group)), rank_(rank), world_(world) {}

  int Rank() const override { return rank_; }
  int WorldSize() const override { return world_; }
  CommCounters Counters() const override { return counters_; }

  void AllReduceSum(at::Tensor& tensor) override {
    std::vector<at::Tensor> tensors{tensor};
    Run(Bytes(tensor), [&] { return group_->allreduce(tensors); });
  }
  void Broadcast(at::Tensor& tensor, int root) override {
    std::vector<at::Tensor> tensors{tensor};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    // The root sends its tensor; the others only receive.
    Run(rank_ == root ? Bytes(tensor) : 0, [&] { return group_->broadcast(tensors, options); });
  }
  void AllGather(const at::Tensor& input, std::vector<at::Tensor>& outputs) override {
    std::vector<std::vector<at::Tensor>> out{outputs};
    std::vector<at::Tensor> in{input};
    Run(Bytes(input), [&] { return group_->allgather(out, in); });
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!out[0][i].is_same(outputs[i])) outputs[i].copy_(out[0][i]);
    }
  }
  void AllToAll(at::Tensor& output, at::Tensor& input) override {
    std::vector<int64_t> equal_splits;  // empty: equal chunks along dim 0
    std::vector<int64_t> same_splits;
    // What this rank sends to the others (its own chunk stays local).
    const int64_t sent = Bytes(input) / world_ * (world_ - 1);
    Run(sent, [&] { return group_->alltoall_base(output, input, equal_splits, same_splits); });
  }
  void Barrier() override {
    Run(0, [&] { return group_->barrier(); });
  }
  void ReduceSum(at::Tensor& tensor, int root) override {
    std::vector<at::Tensor> tensors{tensor};
    c10d::ReduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    options.rootRank = root;
    // Every rank but the root sends its contribution.
    Run(rank_ == root ? 0 : Bytes(tensor), [&] { return group_->reduce(tensors, options); });
  }

 private:
  template <typename Start>
  void Run(int64_t bytes, Start&& start) {
    const auto begin = Clock::now();
    c10::intrusive_ptr<c10d::Work> work = start();
    work->wait();
    counters_.seconds += std::chrono::duration<double>(Clock::now() - begin).count();
    counters_.bytes += bytes;
    ++counters_.calls;
  }

  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  int rank_, world_;
  CommCounters counters_;
};

}  // namespace

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  std::unique_ptr<GlooCommunicator> comm;
};

ProcessGroup::ProcessGroup(const RankEnv& env, double timeout_seconds)
    : env_(env), impl_(std::make_unique<Impl>()) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(env.master_port);
  options.timeout = timeout;
  if (env.agent_store) {
    // torchrun's agent serves the store; every rank is a client and nobody waits for a count.
    options.isServer = false;
    options.waitWorkers = false;
  } else {
    options.isServer = env.rank == 0;
    options.numWorkers = static_cast<size_t>(env.world_size);
    options.waitWorkers = true;
  }
  auto tcp = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
  // A store that outlives one attempt (torchrun's, across restarts) must not show this attempt
  // the keys of the last one.
  c10::intrusive_ptr<c10d::Store> attempt_store =
      env.agent_store ? c10::intrusive_ptr<c10d::Store>(c10::make_intrusive<c10d::PrefixStore>(
                            "memsweep/attempt_" + std::to_string(env.restart_count), tcp))
                      : c10::intrusive_ptr<c10d::Store>(tcp);
  impl_->store = attempt_store;
  auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout);
  // Bind where rank 0 is reachable from: loopback for a one-machine run, else this host.
  gloo_options->devices.push_back(
      env.master_addr == "127.0.0.1" || env.master_addr == "localhost"
          ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
          : c10d::ProcessGroupGloo::createDefaultDevice());
  gloo_options->threads = 1;
  auto group_store = c10::make_intrusive<c10d::PrefixStore>("gloo", attempt_store);
  auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(group_store, env.rank,
                                                           env.world_size, gloo_options);
  impl_->comm = std::make_unique<GlooCommunicator>(group, env.rank, env.world_size);
}

ProcessGroup::~ProcessGroup() = default;

CountingCommunicator& ProcessGroup::Comm() { return *impl_->comm; }

void ProcessGroup::Set(const std::string& key, const std::string& value) {
  impl_->store->set("memsweep/" + key, std::vector<uint8_t>(value.begin(), value.end()));
}

std::string ProcessGroup::Get(const std::string& key) {
  const std::vector<uint8_t> value = impl_->store->get("memsweep/" + key);
  return std::string(value.begin(), value.end());
}

}  // namespace memsweep::dist
