// precision/bf16: bf16 parameters and gradients, fp32 master weights and AdamW state. Each group
// of the model's parameters becomes bf16 as the model stage builds it (its fp32 values become the
// masters), so the whole forward and backward pass runs in bf16 (norm statistics, softmax and the
// loss stay fp32, see README.md); the optimizer updates the fp32 masters, which are copied back
// into the parameters after every update — or, under a ZeRO sharding plugin, hands the masters
// over to it (it keeps their partitions).
#include "master_weights.h"
#include "memsweep/plugin.h"

namespace {

using memsweep::plugins::precision::MasterWeights;

class Bf16MasterWeights final : public memsweep::PrecisionStrategy {
 public:
  explicit Bf16MasterWeights(const memsweep::PluginParams&) {}

  c10::ScalarType ComputeDtype() const override { return c10::ScalarType::BFloat16; }
  bool MathPreserving() const override { return false; }

  std::vector<at::Tensor> OptimizerParameters(
      const std::vector<at::Tensor>& model_parameters) override {
    return weights_.MastersFor(model_parameters);
  }

  // A sharding strategy that owns the update (ZeRO) keeps its partition of the masters and
  // writes the parameters itself: for the parameters handed over (all at once, or a group at a
  // time while the model is built) the hooks below have nothing left to do.
  std::vector<at::Tensor> HandOverOptimizerParameters(
      const std::vector<at::Tensor>& model_parameters) override {
    std::vector<at::Tensor> masters = weights_.MastersFor(model_parameters);
    weights_.Remove(model_parameters);
    return masters;
  }

  void OnStageBegin(memsweep::Stage stage, memsweep::RunContext&) override {
    if (stage == memsweep::Stage::kOptimizerStep) weights_.GradientsToMasters();
  }

  // Each group of parameters becomes bf16 as soon as it is built; the end of the model stage
  // converts whatever a host did not hand over group by group.
  void OnParametersBuilt(const std::vector<size_t>& built, memsweep::RunContext& context) override {
    const std::vector<at::Tensor> parameters = context.model->Parameters();
    std::vector<at::Tensor> group;
    for (size_t i : built) group.push_back(parameters[i]);
    weights_.Add(group);
  }

  void OnStageEnd(memsweep::Stage stage, memsweep::RunContext& context) override {
    if (stage == memsweep::Stage::kModel) weights_.Add(context.model->Parameters());
    if (stage == memsweep::Stage::kOptimizerStep) weights_.MastersToParameters();
  }

  // The optimizer_step hooks find nothing to do for masters handed over to a sharding strategy.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    using memsweep::HookPoint;
    using memsweep::Stage;
    return std::vector<memsweep::StageHook>{
        {Stage::kModel, HookPoint::kParametersBuilt,
         "casts the group's trainable parameters to bf16, keeping fp32 masters"},
        {Stage::kModel, HookPoint::kEnd, "casts trainable parameters not cast by group to bf16"},
        {Stage::kOptimizerStep, HookPoint::kBegin,
         "moves the bf16 gradients onto the fp32 masters it holds (none once handed over)"},
        {Stage::kOptimizerStep, HookPoint::kEnd,
         "copies the fp32 masters it holds into the bf16 parameters"}};
  }

 private:
  MasterWeights weights_;
};

}  // namespace

MEMSWEEP_PLUGIN(Bf16MasterWeights, "bf16", "precision", "1.0.0",
                "bf16 parameters and gradients; fp32 master weights and AdamW state",
                MEMSWEEP_NO_PARAMS, /*slot_default=*/0)
