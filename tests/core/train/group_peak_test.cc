// A multi-process run divides the group's tokens/s by the group's GEMM peak: every rank's
// calibrated rate summed over the ranks, not one process's. Checked in one process against a
// communicator that stands for two identical ranks (every sum doubles), so the figure is exact:
// the calibration is cached per process, dtype, GEMM path and thread count.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "core/comm/process_group.h"
#include "core/env/cpu_gemm.h"
#include "core/env/gemm_calibration.h"
#include "core/env/threads.h"
#include "support/run_configs.h"

namespace memsweep::train {
namespace {

// Rank 0 of two ranks that hold the same tensors: sums double, everything else is the identity.
class MirrorCommunicator final : public dist::CountingCommunicator {
 public:
  int Rank() const override { return 0; }
  int WorldSize() const override { return 2; }
  void AllReduceSum(at::Tensor& tensor) override { tensor.mul_(2); }
  void Broadcast(at::Tensor&, int) override {}
  void AllGather(const at::Tensor& input, std::vector<at::Tensor>& outputs) override {
    for (at::Tensor& o : outputs) o.copy_(input);
  }
  void AllToAll(at::Tensor& output, at::Tensor& input) override { output.copy_(input); }
  void Barrier() override {}
  void ReduceSum(at::Tensor& tensor, int root) override {
    if (root == 0) tensor.mul_(2);
  }
  dist::CommCounters Counters() const override { return {}; }
};

TEST(GroupPeakTest, MultiProcessMfuDividesByEveryRanksPeak) {
  const config::RunConfig cfg = testing_support::TinyRun(
      2, {"device.world_size=2", "strategies.sharding.plugin=ddp", "device.threads=1"});
  MirrorCommunicator comm;
  Trainer trainer(cfg, config::InstantiateStrategies(cfg));
  trainer.SetCommunicator(&comm);
  const RunResult result = trainer.Run();
  ASSERT_EQ(result.status, RunStatus::kOk) << result.error;
  env::SetThreads(1);
  const env::ScopedCpuGemmPaths restore;  // one rank's peak on the fp32 path the run took
  env::UseFp32Gemm(env::ChooseFp32Gemm(cfg.device.fp32_gemm));
  const double one_rank = env::CachedGemmPeakFlops(at::kFloat);
  ASSERT_GT(one_rank, 0.0);
  EXPECT_DOUBLE_EQ(result.summary.peak_flops, 2 * one_rank);
  EXPECT_DOUBLE_EQ(result.summary.mfu, result.summary.tokens_per_s *
                                           result.summary.flops_per_token / (2 * one_rank));
}

}  // namespace
}  // namespace memsweep::train
