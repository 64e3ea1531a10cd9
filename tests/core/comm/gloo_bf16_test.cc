// The host's Gloo communicator with bf16 tensors (Gloo itself refuses them): two ranks in one
// process, each on its own thread with its own process group. Data-moving collectives must keep
// every bit; sums must equal the fp32 sum rounded once to bf16, the same on every rank; pieces
// longer than the communicator's staging piece (2^20 elements) and lengths that do not divide by
// the world size included.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "core/comm/process_group.h"

namespace memsweep::dist {
namespace {

constexpr int kWorld = 2;
constexpr int64_t kLong = (int64_t{1} << 20) + 3;  // two staging pieces, odd length

// Runs body(rank, comm) on kWorld threads connected through one TCPStore on a free port.
void OnTwoRanks(const std::function<void(int, CountingCommunicator&)>& body) {
  const int port = FreeTcpPort();
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(kWorld);
  for (int rank = 0; rank < kWorld; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        RankEnv env;
        env.rank = rank;
        env.world_size = kWorld;
        env.master_port = port;
        ProcessGroup group(env, /*timeout_seconds=*/60);
        body(rank, group.Comm());
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// Rank-dependent bf16 values spanning many exponents, including bit patterns that are NaN or
// infinity when read as fp16 (large bf16 magnitudes).
at::Tensor Values(int rank, int64_t n) {
  at::Tensor x = at::arange(n, at::kFloat).mul_(0.37).add_(rank * 11.0).sin_();
  x.mul_(at::pow(10.0, at::arange(n, at::kFloat).remainder_(13).sub_(6)));
  return x.to(at::kBFloat16);
}

bool SameBits(const at::Tensor& a, const at::Tensor& b) {
  return at::equal(a.view(at::kShort), b.view(at::kShort));
}

TEST(GlooBf16, AllReduceSumIsTheFp32SumRoundedOnceOnEveryRank) {
  const at::Tensor expected = (Values(0, kLong).to(at::kFloat) + Values(1, kLong).to(at::kFloat))
                                  .to(at::kBFloat16);
  std::vector<at::Tensor> results(kWorld);
  OnTwoRanks([&](int rank, CountingCommunicator& comm) {
    at::Tensor x = Values(rank, kLong);
    comm.AllReduceSum(x);
    results[rank] = x;
    // Each rank sends half of its elements twice (reduce-scatter, then allgather of its sums) at
    // 2 bytes each: 2 bytes per element in all, plus the padding of odd pieces.
    EXPECT_GE(comm.Counters().bytes, 2 * kLong) << "rank " << rank;
    EXPECT_LE(comm.Counters().bytes, 2 * kLong + 16) << "rank " << rank;
  });
  EXPECT_TRUE(SameBits(results[0], expected));
  EXPECT_TRUE(SameBits(results[1], expected));
}

TEST(GlooBf16, ReduceSumGivesTheRootTheSumOfEveryRank) {
  const at::Tensor expected = (Values(0, kLong).to(at::kFloat) + Values(1, kLong).to(at::kFloat))
                                  .to(at::kBFloat16);
  at::Tensor at_root;
  OnTwoRanks([&](int rank, CountingCommunicator& comm) {
    at::Tensor x = Values(rank, kLong).view({-1, 1});  // any contiguous shape
    comm.ReduceSum(x, /*root=*/1);
    if (rank == 1) at_root = x.view({-1});
    EXPECT_EQ(comm.Counters().bytes, rank == 1 ? 0 : 2 * kLong) << "rank " << rank;
  });
  EXPECT_TRUE(SameBits(at_root, expected));
}

TEST(GlooBf16, DataMovingCollectivesKeepEveryBit) {
  const int64_t n = 1000;
  std::vector<at::Tensor> broadcast(kWorld), gathered(kWorld), exchanged(kWorld);
  OnTwoRanks([&](int rank, CountingCommunicator& comm) {
    broadcast[rank] = Values(rank, n);
    comm.Broadcast(broadcast[rank], /*root=*/0);
    std::vector<at::Tensor> outputs{at::empty({n}, at::kBFloat16), at::empty({n}, at::kBFloat16)};
    comm.AllGather(Values(rank, n), outputs);
    gathered[rank] = at::cat(outputs);
    at::Tensor input = Values(rank, 2 * n);
    exchanged[rank] = at::empty({2 * n}, at::kBFloat16);
    comm.AllToAll(exchanged[rank], input);
  });
  for (int rank = 0; rank < kWorld; ++rank) {
    EXPECT_TRUE(SameBits(broadcast[rank], Values(0, n))) << "rank " << rank;
    EXPECT_TRUE(SameBits(gathered[rank], at::cat({Values(0, n), Values(1, n)}))) << "rank " << rank;
    // Chunk r of the output came from rank r's chunk `rank`.
    for (int from = 0; from < kWorld; ++from) {
      EXPECT_TRUE(SameBits(exchanged[rank].narrow(0, from * n, n),
                           Values(from, 2 * n).narrow(0, rank * n, n)))
          << "rank " << rank << " from " << from;
    }
  }
}

}  // namespace
}  // namespace memsweep::dist
