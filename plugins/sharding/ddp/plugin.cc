// sharding/ddp: data parallel with replicated model state. Before each optimizer step the
// gradients are all-reduced (sum) over the ranks in buckets of reduce_bucket_size elements; every
// rank then runs the host's AdamW on identical gradients and stays identical. bf16 gradients
// (precision/bf16) are all-reduced as they are (the host's communicator sums bf16 in fp32) and
// then widened onto the precision plugin's masters by its own optimizer_step hook.
#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/utils.h>

#include <stdexcept>

#include "../common/bucketed_collectives.h"
#include "memsweep/plugin.h"

namespace {

using memsweep::RunContext;
using memsweep::Stage;

class Ddp final : public memsweep::ShardingStrategy {
 public:
  explicit Ddp(const memsweep::PluginParams& p) : bucket_(p.Int("reduce_bucket_size")) {
    if (bucket_ < 1) throw std::invalid_argument("reduce_bucket_size must be at least 1 element");
  }
  // The same update as one process on the global batch; only the summation order differs.
  bool MathPreserving() const override { return true; }
  // Frozen parameters have no gradient: the buckets hold the trainable ones only.
  bool SupportsFrozenParameters() const override { return true; }

  void OnStageBegin(Stage stage, RunContext& ctx) override {
    if (stage != Stage::kOptimizerStep || ctx.comm == nullptr) return;
    torch::NoGradGuard no_grad;
    std::vector<at::Tensor> bucket;
    int64_t elements = 0;
    for (const at::Tensor& p : ctx.model->Parameters()) {
      if (!p.grad().defined()) continue;
      bucket.push_back(p.grad());
      elements += p.numel();
      if (elements >= bucket_) Flush(*ctx.comm, bucket, elements);
    }
    Flush(*ctx.comm, bucket, elements);
  }
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{
        {Stage::kOptimizerStep, memsweep::HookPoint::kBegin,
         "all-reduces gradients across ranks in buckets (world_size > 1)"}};
  }

 private:
  // One bucket: concatenated, summed over the ranks, copied back into each gradient.
  static void Flush(memsweep::Communicator& comm, std::vector<at::Tensor>& bucket,
                    int64_t& elements) {
    if (bucket.empty()) return;
    std::vector<at::Tensor> flat_views;
    for (const at::Tensor& g : bucket) flat_views.push_back(g.reshape({-1}));
    at::Tensor flat = at::cat(flat_views);
    comm.AllReduceSum(flat);
    int64_t offset = 0;
    for (at::Tensor& g : bucket) {
      g.copy_(flat.narrow(0, offset, g.numel()).view(g.sizes()));
      offset += g.numel();
    }
    bucket.clear();
    elements = 0;
  }

  int64_t bucket_;
};

const MemsweepParamSpec kParams[] = {
    {"reduce_bucket_size", MEMSWEEP_PARAM_INT, "500000000",
     "gradient elements all-reduced per collective (DeepSpeed's reduce_bucket_size)", 0}};

}  // namespace

MEMSWEEP_PLUGIN(Ddp, "ddp", "sharding", "1.0.0",
                "Data parallel: replicated model, gradients all-reduced in buckets", kParams,
                /*slot_default=*/0)
