// Zero3Engine: ZeRO stage 3. Parameters are partitioned too: a rank keeps its partition of the
// flat parameter vector (param_units.h) and gathers each block's parameters just before the
// block runs forward, frees them after it, gathers them again just before the block's backward
// (autograd nodes around the block) and frees them once the backward has passed the block. The
// parameters outside the blocks (embedding, final norm, LM head) are gathered for the whole
// forward/backward of a micro-batch. Gradients follow ZeRO-2's path (each block's reduced to the
// owners when its backward ends, common/gradient_groups.h); the optimizer updates the owned
// partition in place, and the next forward gathers the new values.
//
// prefetch_bucket_size > 0 gathers the next block (in forward; the previous one in backward)
// together with the current one when it has at most that many elements. The collectives block,
// so on Gloo this only moves the gather earlier and shows what prefetching costs in memory.
// offload_param = cpu keeps the owned partition in the host pool; offload_optimizer = cpu keeps
// the optimizer state (and the update) there.
//
// Mixed precision (precision/bf16): the partition, the gathered blocks and the gradients are bf16;
// the rank keeps its partition of the fp32 master copies (AdoptOptimizerParameters), updates it
// and rounds it into the bf16 partition: (2 + 2 + K)Ψ/N per rank with K = 12.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <unordered_map>
#include <vector>

#include "../common/block_backward_hooks.h"
#include "../common/block_groups.h"
#include "../common/gradient_groups.h"
#include "../common/partition_optimizer.h"
#include "../common/solo_communicator.h"
#include "param_units.h"
#include "memsweep/strategy.h"

namespace memsweep::sharding {

struct Zero3Options {
  int64_t reduce_bucket_size = 500000000;
  int64_t prefetch_bucket_size = 0;
  int64_t param_persistence_threshold = 0;
  bool offload_optimizer = false;
  bool offload_param = false;
};

class Zero3Engine final : public BlockBackwardListener {
 public:
  explicit Zero3Engine(Zero3Options options);

  void OnStageBegin(Stage stage, RunContext& ctx);
  void OnStageEnd(Stage stage, RunContext& ctx);
  // A model built group by group (DeepSpeed's zero.Init): each ZeRO group (a block, or the
  // parameters outside the blocks) is partitioned as soon as all its parameters are built, so a
  // rank never holds the whole model — its partition, plus the groups not complete yet.
  void ParametersBuilt(const std::vector<size_t>& built, RunContext& ctx);
  // Where the three above act (Strategy::StageHooks).
  std::vector<StageHook> StageHooks() const;
  // bf16 parameters: keeps this rank's partition of the precision slot's fp32 master copies.
  // One group's share of them, while the model is built (PartitionOptimizer::AdoptGroup).
  void AdoptGroupOptimizerParameters(RunContext& ctx, const std::vector<size_t>& built,
                                     const std::vector<at::Tensor>& updated);
  void AdoptOptimizerParameters(RunContext& ctx, const std::vector<at::Tensor>& updated);
  double OptimizerStep(RunContext& ctx, const OptimizerStepSpec& spec);
  void AddModelState(ModelStateTensors& state) const;
  model::BlockRunner WrapBlockRunner(model::BlockRunner inner);

  // Called by the autograd nodes around block `block` during backward.
  void BlockBackwardBegins(size_t block) override;
  void BlockBackwardEnds(size_t block) override;

 private:
  Communicator& Comm() { return comm_ != nullptr ? *comm_ : solo_; }
  void Partition(RunContext& ctx);
  void BeginPartition(RunContext& ctx, at::ScalarType dtype);
  void GatherBlock(size_t block, int direction);

  Zero3Options options_;
  Communicator* comm_ = nullptr;
  SoloCommunicator solo_;
  std::vector<at::Tensor> params_;
  FlatPartition layout_;
  std::unique_ptr<ParamUnits> units_;
  BlockGroups groups_;
  size_t blocks_ = 0;  // groups 0..blocks_-1 are the blocks, group blocks_ the rest
  std::vector<bool> built_;        // per parameter: built (handed to ParametersBuilt)
  std::vector<bool> group_added_;  // per group: partitioned
  GradientGroups grads_;
  at::Tensor owned_grad_;
  PartitionOptimizer optimizer_;
};

}  // namespace memsweep::sharding
