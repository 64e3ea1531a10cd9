#include "core/comm/process_group.h"

#include "core/comm/nccl_communicator.h"

// ProcessGroupGloo.hpp is only compiled in with USE_C10D_GLOO (set when LibTorch was built
// with Gloo, as Debian's is); its Gloo headers come from libgloo-dev.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace memsweep::dist {
namespace {

using Clock = std::chrono::steady_clock;

int64_t Bytes(const at::Tensor& t) { return static_cast<int64_t>(t.numel() * t.element_size()); }

// Gloo in LibTorch 1.13 refused bf16 tensors ("Invalid scalar type"); 2.11's accepts them, but
// memsweep keeps this staging so that the numerics stay fixed across LibTorch versions. Collectives that only move
// data send a bf16 tensor as an fp16 view of the same bits (same element size; Gloo does no
// arithmetic on them). The sums cannot add fp16-viewed bits, so they move bits the same way and
// add on the receiving rank, in fp32 and in rank order, rounding once to bf16: every rank of an
// all-reduce ends with the same values, and a sum of two ranks equals what bf16 accumulation
// of the same two gradients gives in one process. Their staging buffers are bounded by running
// in pieces of kBf16Piece elements.
constexpr int64_t kBf16Piece = int64_t{1} << 20;

bool IsBf16(const at::Tensor& t) { return t.scalar_type() == at::kBFloat16; }
at::Tensor Bits(const at::Tensor& t) { return IsBf16(t) ? t.view(at::kHalf) : t; }

// The fp32 sum of rows [0, n) of `parts` (n x length), in row order.
at::Tensor SumInRankOrder(const at::Tensor& parts) {
  at::Tensor sum = parts[0].to(at::kFloat);
  for (int64_t r = 1; r < parts.size(0); ++r) sum.add_(parts[r]);
  return sum;
}

class GlooCommunicator final : public CountingCommunicator {
 public:
  GlooCommunicator(c10::intrusive_ptr<c10d::ProcessGroupGloo> group, int rank, int world)
      : group_(std::move(group)), rank_(rank), world_(world) {}

  int Rank() const override { return rank_; }
  int WorldSize() const override { return world_; }
  CommCounters Counters() const override { return counters_; }

  void AllReduceSum(at::Tensor& tensor) override {
    if (IsBf16(tensor)) return InPieces(tensor, [&](at::Tensor piece) { AllReduceBf16(piece); });
    std::vector<at::Tensor> tensors{tensor};
    Run(Bytes(tensor), [&] { return group_->allreduce(tensors); });
  }
  void Broadcast(at::Tensor& tensor, int root) override {
    std::vector<at::Tensor> tensors{Bits(tensor)};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    // The root sends its tensor; the others only receive.
    Run(rank_ == root ? Bytes(tensor) : 0, [&] { return group_->broadcast(tensors, options); });
  }
  void AllGather(const at::Tensor& input, std::vector<at::Tensor>& outputs) override {
    std::vector<at::Tensor> bits;
    for (const at::Tensor& o : outputs) bits.push_back(Bits(o));
    std::vector<std::vector<at::Tensor>> out{bits};
    std::vector<at::Tensor> in{Bits(input)};
    Run(Bytes(input), [&] { return group_->allgather(out, in); });
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!out[0][i].is_same(bits[i])) bits[i].copy_(out[0][i]);
    }
  }
  void AllToAll(at::Tensor& output, at::Tensor& input) override {
    std::vector<int64_t> equal_splits;  // empty: equal chunks along dim 0
    std::vector<int64_t> same_splits;
    // What this rank sends to the others (its own chunk stays local).
    const int64_t sent = Bytes(input) / world_ * (world_ - 1);
    at::Tensor out = Bits(output), in = Bits(input);
    Run(sent, [&] { return group_->alltoall_base(out, in, equal_splits, same_splits); });
  }
  void Barrier() override {
    Run(0, [&] { return group_->barrier(); });
  }
  void ReduceSum(at::Tensor& tensor, int root) override {
    if (IsBf16(tensor)) return InPieces(tensor, [&](at::Tensor piece) { ReduceBf16(piece, root); });
    std::vector<at::Tensor> tensors{tensor};
    c10d::ReduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    options.rootRank = root;
    // Every rank but the root sends its contribution.
    Run(rank_ == root ? 0 : Bytes(tensor), [&] { return group_->reduce(tensors, options); });
  }

 private:
  // Calls fn on consecutive 1-D pieces of a contiguous tensor (views: writes reach the tensor).
  template <typename Fn>
  static void InPieces(at::Tensor& tensor, Fn&& fn) {
    at::Tensor flat = tensor.view({-1});
    for (int64_t begin = 0; begin < flat.numel(); begin += kBf16Piece) {
      fn(flat.narrow(0, begin, std::min(kBf16Piece, flat.numel() - begin)));
    }
  }

  // Reduce-scatter built from alltoall (rank r sums slice r of every rank's piece), then an
  // allgather of the sums: each rank sends about 2(N-1)/N of the piece, as a ring all-reduce.
  void AllReduceBf16(at::Tensor piece) {
    const int64_t slice = (piece.numel() + world_ - 1) / world_;
    at::Tensor send = at::zeros({world_ * slice}, piece.options());
    send.narrow(0, 0, piece.numel()).copy_(piece);
    at::Tensor received = at::empty_like(send);
    AllToAll(received, send);
    const at::Tensor sum = SumInRankOrder(received.view({world_, slice})).to(at::kBFloat16);
    std::vector<at::Tensor> gathered;  // every rank's sum, back into `send`
    for (int r = 0; r < world_; ++r) gathered.push_back(send.narrow(0, r * slice, slice));
    AllGather(sum, gathered);
    piece.copy_(send.narrow(0, 0, piece.numel()));
  }

  // Every rank's piece gathered at the root, summed there.
  void ReduceBf16(at::Tensor piece, int root) {
    std::vector<at::Tensor> inputs{Bits(piece)};
    std::vector<std::vector<at::Tensor>> outputs;
    at::Tensor parts;
    if (rank_ == root) {
      parts = at::empty({world_, piece.numel()}, piece.options());
      outputs.emplace_back();
      for (int r = 0; r < world_; ++r) outputs[0].push_back(Bits(parts[r]));
    }
    c10d::GatherOptions options;
    options.rootRank = root;
    Run(rank_ == root ? 0 : Bytes(piece), [&] { return group_->gather(outputs, inputs, options); });
    if (rank_ == root) piece.copy_(SumInRankOrder(parts));
  }

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
