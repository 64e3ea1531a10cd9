// ZeroEngine: ZeRO stages 1 and 2 (Rajbhandari et al., 2020) over the SDK's Communicator.
//
// At the end of the model stage every parameter becomes a view into one flat buffer of the
// parameters' dtype (flat_partition.h); rank r owns partition r. Each rank keeps AdamW state for
// its partition only, updates it and then receives every other partition from its owner.
//
// Mixed precision (precision/bf16): parameters and gradients are bf16 (2 bytes each), and the
// rank takes over its partition of the precision plugin's fp32 master copies in the optimizer
// stage; the update runs on the fp32 master partition (the bf16 gradient widened a chunk at a
// time) and is rounded into the bf16 parameters. Model state per rank is then the ZeRO paper's
// 2Ψ + 2Ψ + KΨ/N (stage 1) and 2Ψ + (2 + K)Ψ/N (stage 2) with K = 12 (master, exp_avg,
// exp_avg_sq); with fp32 parameters 4Ψ + 4Ψ + 8Ψ/N and 4Ψ + 12Ψ/N.
//
//   stage 1  gradients stay full size (a persistent flat buffer that backward accumulates into),
//            all-reduced in buckets before the step; the rank steps its own slice of them.
//   stage 2  gradients are reduced to their owners during backward, block by block
//            (gradient_groups.h): when a block's backward begins its gradients get one buffer,
//            when it ends the buffer is reduced into the owners' persistent partitions of P
//            elements and freed. A rank holds its gradient partition plus one block's gradients
//            (and the LM head's and embedding's, reduced at the end of backward), never 4Ψ.
//
// A frozen base (an adapter's: requires_grad false) stays as the adapter stored it, replicated
// and untouched: only the trainable parameters are flattened, partitioned, reduced and updated,
// Ψ above counting them alone. Their layout is known only once every group is built (an adapter
// adds its factors group by group), so once a built group holds a frozen parameter or a tensor the
// model did not have at the first group, the flat buffer waits for the end of the model stage:
// the trainable parameters (and the fp32 master copies handed over with them) are held as built
// and flattened then, at once. Groups flattened before that (an adapter that keeps the embedding
// trainable) are flattened again; their master partitions are gathered back first.
//
// offload_optimizer = cpu keeps the optimizer's partition (fp32 master copy, exp_avg,
// exp_avg_sq and a gradient copy) in the host pool, outside the device budget; the update runs
// there and the new partition is copied back into the device parameters.
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "block_backward_hooks.h"
#include "block_groups.h"
#include "flat_partition.h"
#include "gradient_groups.h"
#include "partition_optimizer.h"
#include "solo_communicator.h"
#include "memsweep/strategy.h"

namespace memsweep::sharding {

struct ZeroOptions {
  int stage = 1;
  int64_t reduce_bucket_size = 500000000;  // elements
  bool offload_optimizer = false;
};

class ZeroEngine final : public BlockBackwardListener {
 public:
  explicit ZeroEngine(ZeroOptions options);

  // Gradient memory exists from the first backward of a step to the end of its update, as with
  // the host optimizer (which leaves no gradient behind): stage 1 the full flat gradient that
  // backward accumulates into, stage 2 the rank's partition.
  void OnStageBegin(Stage stage, RunContext& ctx);

  void OnStageEnd(Stage stage, RunContext& ctx);
  // A model built group by group: the flat parameter buffer is allocated with the first group
  // and each group moves into it as it is built (never the whole model twice).
  void ParametersBuilt(const std::vector<size_t>& built, RunContext& ctx);
  // Where the three above act, which depends on the ZeRO stage (Strategy::StageHooks).
  std::vector<StageHook> StageHooks() const;

  // Stages 1 and 2 keep every parameter on every rank: blocks run as they are; stage 2 marks
  // them so that each block's gradients are reduced as soon as its backward is done.
  model::BlockRunner WrapBlockRunner(model::BlockRunner inner);

  void BlockBackwardBegins(size_t block) override;
  void BlockBackwardEnds(size_t block) override;

  // One group's share of them, while the model is built (PartitionOptimizer::AdoptGroup).
  void AdoptGroupOptimizerParameters(RunContext& ctx, const std::vector<size_t>& built,
                                     const std::vector<at::Tensor>& updated);
  void AdoptOptimizerParameters(RunContext& ctx, const std::vector<at::Tensor>& updated);

  double OptimizerStep(RunContext& ctx, const OptimizerStepSpec& spec);

  // Device-side state beyond the parameters and their .grad views (host-pool state is not device
  // memory: it shows in host_pool_peak_bytes instead).
  void AddModelState(ModelStateTensors& state) const;

  const FlatPartition& Layout() const { return layout_; }

 private:
  Communicator& Comm() { return comm_ != nullptr ? *comm_ : solo_; }

  void Partition(RunContext& ctx);
  // The trainable parameters turn out not to be known yet (a frozen parameter, or a tensor an
  // adapter added): from now on nothing is flattened before the end of the model stage.
  void DeferFlattening();

  ZeroOptions options_;
  Communicator* comm_ = nullptr;
  SoloCommunicator solo_;
  std::vector<at::Tensor> params_;
  FlatPartition layout_;
  at::Tensor flat_params_;
  at::Tensor flat_grad_;   // stage 1: the full gradient, during a step
  at::Tensor owned_grad_;  // stage 2: this rank's gradient partition, during a step
  BlockGroups groups_;     // stage 2
  GradientGroups grads_;   // stage 2
  PartitionOptimizer optimizer_;
  // The flat buffer waits for the end of the model stage (a frozen base); meanwhile the fp32
  // master copies handed over, with their parameters.
  bool deferred_ = false;
  std::vector<size_t> flattened_;  // into params_: the parameters in the flat buffer so far
  std::vector<std::pair<at::Tensor, at::Tensor>> held_masters_;
};

}  // namespace memsweep::sharding
