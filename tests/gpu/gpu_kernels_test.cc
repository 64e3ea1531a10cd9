// The kernels slot on a CUDA device: kernels/fused follows kernels/aten's fp32 losses (the same
// operations; the autograd engine may sum a block input's two gradients in another order) and
// keeps fused_kernels.h's bytes fewer for backward — the caching allocator's sizes are the
// tensors' own here, every saved tensor of this shape being a multiple of its 512-byte rounding.
#include <gtest/gtest.h>

#include "gpu/gpu_test_support.h"

namespace memsweep::testing_support {
namespace {

using train::RunResult;
using train::RunStatus;

class GpuKernels : public GpuTest {};

std::vector<std::string> Kernels(const std::string& plugin) {
  return {"strategies.kernels.plugin=\"" + plugin + "\""};
}

int64_t AfterFirstForward(const RunResult& r) {
  for (const train::TimelinePoint& p : r.timeline) {
    if (p.step == 0 && std::string(p.stage) == "forward") return p.allocated_bytes;
  }
  ADD_FAILURE() << "no forward stage in step 0";
  return 0;
}

TEST_F(GpuKernels, FusedFollowsAtenAndKeepsTheFormulasBytesFewer) {
  const config::RunConfig cfg = GpuRun(4, Kernels("aten"));
  // The process's first matrix product allocates cuBLAS's workspace (32 MiB on Hopper), kept for
  // the process's life: a first run takes it, so both measured runs come after one.
  ASSERT_EQ(Train(cfg).status, RunStatus::kOk);
  const RunResult aten = Train(cfg);
  const RunResult fused = Train(GpuRun(4, Kernels("fused")));
  ASSERT_EQ(aten.status, RunStatus::kOk) << aten.error;
  ASSERT_EQ(fused.status, RunStatus::kOk) << fused.error;
  ExpectLossesClose(fused, aten, [](int64_t) { return 1e-6; });
  const model::LlamaConfig& m = cfg.model.llama;
  const int64_t tokens = 4 * 64;  // TinyRun's rows: 4 of 64 tokens, none padded
  const int64_t per_token =
      m.num_hidden_layers * (2 * 4 * m.hidden_size + 4 * m.intermediate_size) + 4 * m.hidden_size;
  EXPECT_EQ(AfterFirstForward(aten) - AfterFirstForward(fused), tokens * per_token);
}

}  // namespace
}  // namespace memsweep::testing_support
