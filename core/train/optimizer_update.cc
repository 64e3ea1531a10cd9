#include "core/train/optimizer_update.h"

#include <set>
#include <utility>

namespace memsweep::train {
namespace {

class HostAdamWUpdate final : public OptimizerUpdate {
 public:
  HostAdamWUpdate(std::vector<at::Tensor> updated, const AdamWOptions& options)
      : adamw_(std::move(updated), options) {}

  double Step(const OptimizerStepSpec& spec) override {
    adamw_.SetLearningRate(spec.lr);
    const double norm = ClipGradNorm(adamw_.Parameters(), spec.grad_clip);
    adamw_.Step();
    return norm;
  }
  void ZeroGrad() override { adamw_.ZeroGrad(); }
  bool Skippable() const override { return true; }
  const std::vector<at::Tensor>* UpdatedTensors() const override { return &adamw_.Parameters(); }

  void AddModelState(const std::vector<at::Tensor>& params,
                     ModelStateTensors& tensors) const override {
    const std::vector<at::Tensor>& updated = adamw_.Parameters();
    for (const at::Tensor& u : updated) {
      if (u.grad().defined()) tensors.grads.push_back(u.grad());
    }
    for (const at::Tensor& s : adamw_.StateTensors()) tensors.optimizer.push_back(s);
    // Updated tensors that are not parameters (fp32 masters) are optimizer state; when AdamW
    // updates the parameters themselves every shared storage is counted once.
    std::set<const void*> param_storages;
    for (const at::Tensor& p : params) param_storages.insert(p.storage().unsafeGetStorageImpl());
    for (const at::Tensor& u : updated) {
      if (param_storages.count(u.storage().unsafeGetStorageImpl()) == 0) {
        tensors.optimizer.push_back(u);
      }
    }
  }

 private:
  AdamW adamw_;
};

class ShardingSlotUpdate final : public OptimizerUpdate {
 public:
  explicit ShardingSlotUpdate(std::function<double(const OptimizerStepSpec&)> step)
      : step_(std::move(step)) {}
  double Step(const OptimizerStepSpec& spec) override { return step_(spec); }
  void ZeroGrad() override {}  // the slot's step leaves no gradient behind
  bool Skippable() const override { return false; }
  void AddModelState(const std::vector<at::Tensor>&, ModelStateTensors&) const override {}
  const std::vector<at::Tensor>* UpdatedTensors() const override { return nullptr; }

 private:
  std::function<double(const OptimizerStepSpec&)> step_;
};

}  // namespace

std::unique_ptr<OptimizerUpdate> MakeHostAdamWUpdate(std::vector<at::Tensor> updated,
                                                     const AdamWOptions& options) {
  return std::make_unique<HostAdamWUpdate>(std::move(updated), options);
}

std::unique_ptr<OptimizerUpdate> MakeShardingSlotUpdate(
    std::function<double(const OptimizerStepSpec&)> step) {
  return std::make_unique<ShardingSlotUpdate>(std::move(step));
}

}  // namespace memsweep::train
