#include "core/comm/process_group.h"

#include "core/comm/gloo_staging.h"
#include "core/comm/nccl_communicator.h"

// ProcessGroupGloo.hpp is only compiled in with USE_C10D_GLOO (set when LibTorch was built
// with Gloo, as Debian's is); its Gloo headers come from libgloo-dev.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <thread>

namespace memsweep::dist {
namespace {

// The transport of memsweep's Gloo collectives (gloo_staging.h has the staging around it).
class GlooCommunicator final : public GlooStagedCommunicator {
 public:
  GlooCommunicator(c10::intrusive_ptr<c10d::ProcessGroupGloo> group, int rank, int world)
      : GlooStagedCommunicator(rank, world), group_(std::move(group)) {}

 protected:
  void SendAllReduce(at::Tensor& tensor) override {
    std::vector<at::Tensor> tensors{tensor};
    Wait(group_->allreduce(tensors));
  }
  void SendBroadcast(at::Tensor& tensor, int root) override {
    std::vector<at::Tensor> tensors{tensor};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    Wait(group_->broadcast(tensors, options));
  }
  void SendAllGather(std::vector<at::Tensor>& outputs, const at::Tensor& input) override {
    std::vector<std::vector<at::Tensor>> out{outputs};
    std::vector<at::Tensor> in{input};
    Wait(group_->allgather(out, in));
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!out[0][i].is_same(outputs[i])) outputs[i].copy_(out[0][i]);
    }
  }
  void SendAllToAll(at::Tensor& output, at::Tensor& input) override {
    std::vector<int64_t> equal_splits;  // empty: equal chunks along dim 0
    std::vector<int64_t> same_splits;
    Wait(group_->alltoall_base(output, input, equal_splits, same_splits));
  }
  void SendBarrier() override { Wait(group_->barrier()); }
  void SendReduce(at::Tensor& tensor, int root) override {
    std::vector<at::Tensor> tensors{tensor};
    c10d::ReduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    options.rootRank = root;
    Wait(group_->reduce(tensors, options));
  }
  void SendGather(std::vector<at::Tensor>& outputs, const at::Tensor& input, int root) override {
    std::vector<at::Tensor> inputs{input};
    std::vector<std::vector<at::Tensor>> out;
    if (!outputs.empty()) out.push_back(outputs);
    c10d::GatherOptions options;
    options.rootRank = root;
    Wait(group_->gather(out, inputs, options));
  }

 private:
  // Gloo's worker thread holds the work — and through it the collective's tensors and Gloo's own
  // staging buffers — for a moment after wait() returns. Whether those were freed before or after
  // the caller's next allocation was a race that moved a rank's measured peak from run to run (by
  // a buffer's size), so this waits until the worker has let go: the buffers are freed here, in
  // program order, as the estimate's communicator (core/estimate/meta_communicator.h) frees them.
  static void Wait(c10::intrusive_ptr<c10d::Work> work) {
    work->wait();
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (work.use_count() > 1 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
  }

  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

}  // namespace

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  std::unique_ptr<CountingCommunicator> comm;
};

ProcessGroup::ProcessGroup(const RankEnv& env, double timeout_seconds, c10::Device device)
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
  if (device.is_cuda()) {
    impl_->comm = MakeNcclCommunicator(attempt_store, env.rank, env.world_size, device, timeout);
    return;
  }
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
