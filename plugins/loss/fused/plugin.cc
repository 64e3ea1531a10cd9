// loss/fused: linear + cross-entropy in which no logits survive the forward (Liger Kernel's
// fused linear cross-entropy, with ATen ops per chunk): fused_linear_cross_entropy.h.
#include <stdexcept>

#include "fused_linear_cross_entropy.h"
#include "../common/token_loss.h"
#include "memsweep/plugin.h"

namespace {

using memsweep::plugins::loss::FusedLossOptions;

const MemsweepParamSpec kParams[] = {
    {"chunk_tokens", MEMSWEEP_PARAM_INT, "0",
     "tokens per chunk; 0: the default for the device: on CUDA Liger's choice (next power of two "
     "of tokens / ceil(vocab / hidden)), on the CPU chunks of up to 1,024 tokens (longer if "
     "Liger's is) holding at most a quarter of the fp32 logits",
     0},
    {"logits_dtype", MEMSWEEP_PARAM_STRING, "\"fp32\"",
     "\"fp32\": each chunk's logits are upcast before the softmax; \"compute\": not", 0},
    {"accumulation", MEMSWEEP_PARAM_STRING, "\"fp32\"",
     "dtype the LM head's gradient is summed over the chunks in: \"fp32\", or \"weight\" (the "
     "weight's own, as Liger Kernel does: no fp32 buffer, but a bf16 sum drifts)",
     0},
    {"order", MEMSWEEP_PARAM_STRING, "\"auto\"",
     "how the head is cut: \"tokens\" (chunks of tokens, Liger Kernel's), \"vocab\" (blocks of "
     "the vocabulary, two passes, no head-sized fp32 sum), \"auto\" (vocab for a trainable plain "
     "head with 16-bit operands and an fp32 sum, else tokens)",
     0},
};

FusedLossOptions Options(const memsweep::PluginParams& params) {
  FusedLossOptions o;
  o.chunk_tokens = params.Int("chunk_tokens");
  if (o.chunk_tokens < 0) throw std::invalid_argument("chunk_tokens must be 0 or more");
  o.upcast = memsweep::plugins::loss::UpcastsLogits(params.String("logits_dtype"));
  const std::string& accumulation = params.String("accumulation");
  if (accumulation != "fp32" && accumulation != "weight") {
    throw std::invalid_argument("accumulation = \"" + accumulation +
                                "\": write \"fp32\" or \"weight\"");
  }
  o.fp32_accumulation = accumulation == "fp32";
  const std::string& order = params.String("order");
  if (order == "auto") {
    o.order = memsweep::plugins::loss::FusedOrder::kAuto;
  } else if (order == "tokens") {
    o.order = memsweep::plugins::loss::FusedOrder::kTokens;
  } else if (order == "vocab") {
    o.order = memsweep::plugins::loss::FusedOrder::kVocab;
  } else {
    throw std::invalid_argument("order = \"" + order + "\": write \"auto\", \"tokens\" or \"vocab\"");
  }
  return o;
}

class FusedLoss final : public memsweep::LossStrategy {
 public:
  explicit FusedLoss(const memsweep::PluginParams& params) : options_(Options(params)) {}

  // The same loss and gradients as loss/full, to float rounding (fp32 accumulation).
  bool MathPreserving() const override { return options_.fp32_accumulation; }

  memsweep::model::LossFn MakeLoss() override {
    const FusedLossOptions options = options_;
    return [options](const memsweep::model::LossInputs& in) {
      return memsweep::plugins::loss::FusedLinearCrossEntropy(in, options);
    };
  }
  // No stage hooks: its loss function does the work.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }

 private:
  FusedLossOptions options_;
};

}  // namespace

MEMSWEEP_PLUGIN(FusedLoss, "fused", "loss", "1.0.0",
                "Linear + cross-entropy fused per chunk: gradients in the forward, no logits kept "
                "(Liger Kernel's method)",
                kParams, /*slot_default=*/0)
