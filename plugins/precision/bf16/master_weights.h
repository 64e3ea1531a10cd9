// MasterWeights: bf16 parameters with fp32 master copies, as mixed-precision training keeps them
// on GPUs. Converting a model's parameters keeps their fp32 values as the masters and turns the
// parameters themselves into bf16 (rounded to nearest even), so forward and backward run in bf16
// and produce bf16 gradients. Around each optimizer update the gradients move onto the masters
// (widened to fp32, the bf16 gradient released as each one is copied), the optimizer updates the
// masters, and the masters are copied back into the bf16 parameters.
//
//   MasterWeights weights = MasterWeights::Convert(model->Parameters());
//   AdamW optimizer(weights.MastersFor(model->Parameters()), options);
//   ... backward ...
//   weights.GradientsToMasters();
//   optimizer.Step();
//   weights.MastersToParameters();
#pragma once

#include <ATen/core/Tensor.h>

#include <unordered_set>
#include <vector>

namespace memsweep::plugins::precision {

class MasterWeights {
 public:
  MasterWeights() = default;
  // Converts every fp32 parameter to bf16 in place (the tensor object stays the same, so the
  // model keeps using it) and keeps its previous fp32 storage as the master copy.
  static MasterWeights Convert(const std::vector<at::Tensor>& parameters);
  // Converts those of `parameters` not converted yet (a model built group by group; a parameter
  // converted and since handed over stays converted).
  void Add(const std::vector<at::Tensor>& parameters);
  // Forgets these parameters and their masters (handed over to a sharding strategy).
  void Remove(const std::vector<at::Tensor>& parameters);

  // The master of each given parameter, in the same order; throws std::invalid_argument for a
  // parameter that Convert did not see.
  std::vector<at::Tensor> MastersFor(const std::vector<at::Tensor>& parameters) const;
  // Each parameter's gradient, widened to fp32, becomes its master's gradient; the parameter's
  // own (bf16) gradient is released. Parameters without a gradient leave the master without one.
  void GradientsToMasters();
  // Copies every master into its bf16 parameter (rounding to nearest even).
  void MastersToParameters();

  const std::vector<at::Tensor>& parameters() const { return parameters_; }
  const std::vector<at::Tensor>& masters() const { return masters_; }

 private:
  std::vector<at::Tensor> parameters_;  // the model's tensors, bf16 after Convert
  std::vector<at::Tensor> masters_;     // fp32 leaves that require grad, as parameters do
  std::unordered_set<const c10::TensorImpl*> converted_;  // every parameter Add converted
};

}  // namespace memsweep::plugins::precision
