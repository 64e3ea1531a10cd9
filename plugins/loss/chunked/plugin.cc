// loss/chunked: the LM head and the cross-entropy chunk by chunk of tokens (torchtune's chunked
// loss: 8 chunks, each upcast to fp32). Each chunk's logits are freed once its cross-entropy is
// taken; autograd still keeps, per chunk, what log-softmax needs for backward — its output, the
// chunk's logits in fp32 — so the saving is the transient logits and their upcast copy, not the
// saved softmax (README.md has the accounting).
#include <ATen/ATen.h>

#include <stdexcept>

#include "../common/token_loss.h"
#include "memsweep/allocation_label.h"
#include "memsweep/plugin.h"

namespace {

using memsweep::plugins::loss::ChunkRows;
using memsweep::plugins::loss::RowRange;

const MemsweepParamSpec kParams[] = {
    {"chunks", MEMSWEEP_PARAM_INT, "8",
     "number of token chunks (torchtune's default: 8); ignored when chunk_tokens > 0", 0},
    {"chunk_tokens", MEMSWEEP_PARAM_INT, "0", "> 0: tokens per chunk instead of a chunk count", 0},
    {"logits_dtype", MEMSWEEP_PARAM_STRING, "\"fp32\"",
     "\"fp32\": each chunk's logits are upcast before the cross-entropy; \"compute\": not", 0},
};

class ChunkedLoss final : public memsweep::LossStrategy {
 public:
  explicit ChunkedLoss(const memsweep::PluginParams& params)
      : chunks_(params.Int("chunks")),
        chunk_tokens_(params.Int("chunk_tokens")),
        upcast_(memsweep::plugins::loss::UpcastsLogits(params.String("logits_dtype"))) {
    if (chunks_ < 1) throw std::invalid_argument("chunks must be at least 1");
    if (chunk_tokens_ < 0) throw std::invalid_argument("chunk_tokens must be 0 or more");
  }

  // The same sum, in another order: equal to loss/full to float rounding.
  bool MathPreserving() const override { return true; }

  memsweep::model::LossFn MakeLoss() override {
    const int64_t chunks = chunks_, chunk_tokens = chunk_tokens_;
    const bool upcast = upcast_;
    return [=](const memsweep::model::LossInputs& in) {
      memsweep::memory::AllocationLabel label("logits");
      const at::Tensor hidden = in.hidden.reshape({-1, in.hidden.size(-1)});
      const at::Tensor targets = in.targets.reshape({-1});
      const int64_t n = hidden.size(0);
      const int64_t rows = chunk_tokens > 0 ? chunk_tokens : (n + chunks - 1) / chunks;
      at::Tensor summed;
      for (const RowRange& r : ChunkRows(n, rows)) {
        const at::Tensor logits = memsweep::model::ApplyLinear(
            *in.head, hidden.slice(0, r.begin, r.end));
        const at::Tensor part = memsweep::plugins::loss::SummedCrossEntropy(
            logits, targets.slice(0, r.begin, r.end), upcast);
        summed = summed.defined() ? summed + part : part;
      }
      return (summed / in.normalizer).to(at::kFloat);
    };
  }
  // No stage hooks: its loss function does the work.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }

 private:
  int64_t chunks_, chunk_tokens_;
  bool upcast_;
};

}  // namespace

MEMSWEEP_PLUGIN(ChunkedLoss, "chunked", "loss", "1.0.0",
                "LM head and cross-entropy per chunk of tokens (torchtune's chunked loss)",
                kParams, /*slot_default=*/0)
