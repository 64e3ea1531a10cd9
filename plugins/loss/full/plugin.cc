// loss/full: the LM head over every token, then the cross-entropy over the whole logits
// tensor, as transformers' ForCausalLMLoss computes it (upcast to fp32 by default).
//
// keep_logits: the head's logits stay alive until the micro-batch's backward
// has run, as in the training loop Hugging Face's tutorials write —
//     outputs = model(**batch); loss = outputs.loss; loss.backward()
// where `outputs` holds the logits through backward. transformers' Trainer keeps only the loss
// (its compute_loss returns outputs.loss), which is keep_logits = false. The two differ by one
// logits tensor at a backward peak (docs/loss.md measures both against torch.profiler).
#include <ATen/ATen.h>

#include "../common/token_loss.h"
#include "memsweep/allocation_label.h"
#include "memsweep/plugin.h"

namespace {

const MemsweepParamSpec kParams[] = {
    {"logits_dtype", MEMSWEEP_PARAM_STRING, "\"fp32\"",
     "\"fp32\": the logits are upcast before the cross-entropy, as Hugging Face does; "
     "\"compute\": the cross-entropy takes them in the compute dtype",
     0},
    {"keep_logits", MEMSWEEP_PARAM_BOOL, "false",
     "the logits stay alive until the micro-batch's backward has run, as the model output of "
     "a loop `outputs = model(**batch); outputs.loss.backward()` holds them; false: freed once "
     "the loss is taken (transformers' Trainer)",
     0},
};

class FullLoss final : public memsweep::LossStrategy {
 public:
  explicit FullLoss(const memsweep::PluginParams& params)
      : upcast_(memsweep::plugins::loss::UpcastsLogits(params.String("logits_dtype"))),
        keep_logits_(params.Bool("keep_logits")) {}

  bool MathPreserving() const override { return true; }

  void OnStageEnd(memsweep::Stage stage, memsweep::RunContext&) override {
    if (stage == memsweep::Stage::kBackward) kept_ = at::Tensor();
  }
  // Only keep_logits keeps anything to release.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    std::vector<memsweep::StageHook> hooks;
    if (keep_logits_) {
      hooks.push_back({memsweep::Stage::kBackward, memsweep::HookPoint::kEnd,
                       "frees the micro-batch's kept logits (keep_logits)"});
    }
    return hooks;
  }

  memsweep::model::LossFn MakeLoss() override {
    const bool upcast = upcast_;
    at::Tensor* kept = keep_logits_ ? &kept_ : nullptr;
    return [upcast, kept](const memsweep::model::LossInputs& in) {
      memsweep::memory::AllocationLabel label("logits");
      const at::Tensor logits = memsweep::model::ApplyLinear(*in.head, in.hidden);
      if (kept != nullptr) *kept = logits;
      const int64_t vocab = logits.size(-1);
      const at::Tensor summed = memsweep::plugins::loss::SummedCrossEntropy(
          logits.reshape({-1, vocab}), in.targets.reshape({-1}), upcast);
      return (summed / in.normalizer).to(at::kFloat);
    };
  }

 private:
  bool upcast_;
  bool keep_logits_;
  at::Tensor kept_;  // this micro-batch's logits, until its backward has run (keep_logits)
};

}  // namespace

MEMSWEEP_PLUGIN(FullLoss, "full", "loss", "1.0.0",
                "LM head over every token, cross-entropy over the whole logits (transformers' "
                "ForCausalLMLoss)",
                kParams, /*slot_default=*/1)
