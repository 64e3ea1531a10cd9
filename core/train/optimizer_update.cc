#include "core/train/optimizer_update.h"

#include <set>
#include <utility>

#include "core/train/grad_clip.h"
#include "core/train/strategy_hooks.h"

namespace memsweep::train {
namespace {

class HostOptimizerUpdate final : public OptimizerUpdate {
 public:
  HostOptimizerUpdate(std::vector<at::Tensor> updated, std::unique_ptr<Optimizer> optimizer,
                      const plugin::ActiveStrategy& plugin)
      : updated_(std::move(updated)), optimizer_(std::move(optimizer)), plugin_(plugin) {}

  double Step(const OptimizerStepSpec& spec) override {
    const double norm = ClipGradNorm(updated_, spec.grad_clip);
    CallPlugin(plugin_, "optimizer_step", [&] { optimizer_->Step(spec); });
    return norm;
  }
  void ZeroGrad() override {
    for (at::Tensor& u : updated_) u.mutable_grad() = at::Tensor();
  }
  bool Skippable() const override { return true; }
  const std::vector<at::Tensor>* UpdatedTensors() const override { return &updated_; }

  void AddModelState(const std::vector<at::Tensor>& params,
                     ModelStateTensors& tensors) const override {
    for (const at::Tensor& u : updated_) {
      if (u.grad().defined()) tensors.grads.push_back(u.grad());
    }
    for (const at::Tensor& s : optimizer_->StateTensors()) tensors.optimizer.push_back(s);
    // Updated tensors that are not parameters (fp32 masters) are optimizer state; when the
    // update applies to the parameters themselves every shared storage is counted once.
    std::set<const void*> param_storages;
    for (const at::Tensor& p : params) param_storages.insert(p.storage().unsafeGetStorageImpl());
    for (const at::Tensor& u : updated_) {
      if (param_storages.count(u.storage().unsafeGetStorageImpl()) == 0) {
        tensors.optimizer.push_back(u);
      }
    }
  }

 private:
  std::vector<at::Tensor> updated_;
  std::unique_ptr<Optimizer> optimizer_;
  const plugin::ActiveStrategy& plugin_;
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

std::unique_ptr<OptimizerUpdate> MakeHostOptimizerUpdate(std::vector<at::Tensor> updated,
                                                         std::unique_ptr<Optimizer> optimizer,
                                                         const plugin::ActiveStrategy& plugin) {
  return std::make_unique<HostOptimizerUpdate>(std::move(updated), std::move(optimizer), plugin);
}

std::unique_ptr<OptimizerUpdate> MakeShardingSlotUpdate(
    std::function<double(const OptimizerStepSpec&)> step) {
  return std::make_unique<ShardingSlotUpdate>(std::move(step));
}

}  // namespace memsweep::train
