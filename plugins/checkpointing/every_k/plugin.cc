// checkpointing/every_k: every k-th decoder block (0, k, 2k, ...) is recomputed in backward.
#include <memory>

#include "every_k_checkpointing.h"
#include "memsweep/plugin.h"

namespace {

namespace ckpt = memsweep::plugins::checkpointing;

class EveryKCheckpointing final : public memsweep::CheckpointingStrategy {
 public:
  // Math-preserving: recomputes the same forward (RNG and autocast state restored): same gradients.
  bool MathPreserving() const override { return true; }
  explicit EveryKCheckpointing(const memsweep::PluginParams& params) : k_(params.Int("k")) {
    ckpt::ValidateEveryK(k_);
  }
  memsweep::model::BlockRunner MakeBlockRunner() override {
    return ckpt::MakeEveryKRunner(k_, index_);
  }
  // The runner tells blocks apart by address: index the model's blocks once it exists (the end
  // of the model stage), and again before each forward in case another strategy rebuilt them.
  void OnStageEnd(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    if (stage == memsweep::Stage::kModel && ctx.model != nullptr) index_->Assign(*ctx.model);
  }
  void OnStageBegin(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    if (stage == memsweep::Stage::kForward && ctx.model != nullptr) index_->Assign(*ctx.model);
  }
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{
        {memsweep::Stage::kModel, memsweep::HookPoint::kEnd, "indexes the model's blocks"},
        {memsweep::Stage::kForward, memsweep::HookPoint::kBegin,
         "indexes the blocks again (another strategy may have rebuilt them)"}};
  }

 private:
  int64_t k_;
  std::shared_ptr<ckpt::BlockIndex> index_ = std::make_shared<ckpt::BlockIndex>();
};

const MemsweepParamSpec kParams[] = {
    {"k", MEMSWEEP_PARAM_INT, "2",
     "checkpoint blocks 0, k, 2k, ... (1: every block, as checkpointing/full)", 0}};

}  // namespace

MEMSWEEP_PLUGIN(EveryKCheckpointing, "every_k", "checkpointing", "1.0.0",
                "Recompute every k-th decoder block in backward; the others keep activations",
                kParams, /*slot_default=*/0)
