// A callback for tests of adapters: copies the frozen parameters (requires_grad false) at the end
// of the model stage and, at the end of the run, counts those that training changed (bit for
// bit) or left a gradient on. The test asserts on the counts.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "memsweep/strategy.h"

namespace memsweep::testing_support {

class FrozenBaseProbe final : public CallbackStrategy {
 public:
  int64_t frozen = 0;     // frozen parameters after the model stage
  int64_t changed = 0;    // of them, changed by the end of the run
  int64_t with_grad = 0;  // of them, holding a gradient at the end of the run
  int checked = 0;        // end-of-run checks made (1 for a run that completed)

  void OnStageEnd(Stage stage, RunContext& ctx) override {
    if (stage == Stage::kModel) {
      for (const at::Tensor& p : ctx.model->Parameters()) {
        if (p.requires_grad()) continue;
        params_.push_back(p);
        before_.push_back(p.detach().clone());
      }
      frozen = static_cast<int64_t>(params_.size());
    }
    if (stage == Stage::kRunEnd) {
      ++checked;
      for (size_t i = 0; i < params_.size(); ++i) {
        changed += at::equal(params_[i], before_[i]) ? 0 : 1;
        with_grad += params_[i].grad().defined() ? 1 : 0;
      }
    }
  }

 private:
  std::vector<at::Tensor> params_, before_;
};

}  // namespace memsweep::testing_support
