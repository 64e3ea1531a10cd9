// Strategy interfaces: what a plugin implements for its slot, and what it sees at each stage.
//
// Every strategy gets the stage hooks (OnStageBegin / OnStageEnd) with a RunContext; each slot
// adds the capability the training loop asks that slot for:
//
//   slot           interface              asked for   (rows in hook order: SlotNames())
//   allocator      AllocatorStrategy      the memory backend behind the tracking allocator
//   sharding       ShardingStrategy       partitioning across ranks: may own the optimizer step
//                                         (OwnsOptimizerStep / OptimizerStep, taking over the
//                                         precision slot's master copies) and report the
//                                         model state it holds (AddModelState), wrap the
//                                         checkpointing slot's BlockRunner (WrapBlockRunner)
//   precision      PrecisionStrategy      the compute dtype; the tensors the optimizer updates
//                                         (hooks do autocast, casts, scaling)
//   optimizer      OptimizerStrategy      the update and its state (MakeOptimizer,
//                                         memsweep/optimizer.h), when the host runs the step
//   adapter        AdapterStrategy        what trains: freezes the model's parameters and adds
//                                         its own (LoRA factors) as each group is built
//                                         (AdaptGroup), sets the forward of linear layers
//   packing        PackingStrategy        the source of micro-batches (documents → rows)
//   batching       BatchingStrategy       micro-batch size, accumulation, length, padding
//   attention      AttentionStrategy      the attention core (AttentionFn)
//   kernels        KernelsStrategy        the RMSNorm and SwiGLU computations (Kernels,
//                                         memsweep/kernels.h)
//   checkpointing  CheckpointingStrategy  how each decoder block runs (BlockRunner)
//   loss           LossStrategy           the LM head and the loss from the final hidden
//                                         states (LossFn, memsweep/loss.h)
//   callbacks      CallbackStrategy       stage hooks only; zero or more per run
//
// Every strategy declares where its hooks act (StageHooks); the host calls them only there, and
// `memsweep plan --stages` lists them beside the slot capabilities the host uses at each stage.
//
// Every strategy may refuse the run's device (DeviceRefusal): the host asks at plan time, before
// anything runs, and stops with the strategy's message (which names the alternative).
//
// Hooks run in slot order (as listed: SlotNames(), the one source of it) at a stage's beginning
// and in reverse order at its end. At the optimizer stage the host asks the sharding slot first:
// if it owns the step, the precision slot hands its tensors over (HandOverOptimizerParameters)
// to the sharding slot (AdoptOptimizerParameters); otherwise the precision slot names them
// (OptimizerParameters) for the optimizer slot's update (OptimizerStrategy::MakeOptimizer), which
// the host runs. tests/core/train/hook_order_test.cc pins all this.
// Exceptions thrown by a strategy are caught by the host and reported with the plugin's name;
// c10::OutOfMemoryError passes through as a budget OOM.
//
// These are C++ types shared with the host (vtables, std::function, at::Tensor): safe because
// the ABI is exact-match — a plugin loads only into the memsweep built from the same SDK headers
// with the same LibTorch, compiler and C++ library ABI (memsweep/plugin_abi.h).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memsweep/batch_source.h"
#include "memsweep/collectives.h"
#include "memsweep/data_config.h"
#include "memsweep/device_memory.h"
#include "memsweep/host_pool.h"
#include "memsweep/kernels.h"
#include "memsweep/loss.h"
#include "memsweep/memory_backend.h"
#include "memsweep/model.h"
#include "memsweep/optimizer.h"
#include "memsweep/stage.h"

namespace memsweep {

// Every slot, in hook order: its enumerator and its name in experiment files — the one list the
// Slot enum, SlotNames() and kSlotCount come from. A new slot is a line here, its interface
// below, its row in the table above and in docs/plugin-guide.md (hook_order_test.cc checks both
// against this list), a default plugin under plugins/<slot>/ that declares itself the default,
// and a new MEMSWEEP_PLUGIN_ABI_VERSION (memsweep/plugin_abi.h).
#define MEMSWEEP_SLOTS(X)          \
  X(kAllocator, "allocator")        \
  X(kSharding, "sharding")          \
  X(kPrecision, "precision")        \
  X(kOptimizer, "optimizer")        \
  X(kAdapter, "adapter")            \
  X(kPacking, "packing")            \
  X(kBatching, "batching")          \
  X(kAttention, "attention")        \
  X(kKernels, "kernels")            \
  X(kCheckpointing, "checkpointing") \
  X(kLoss, "loss")                  \
  X(kCallbacks, "callbacks")

enum class Slot : uint8_t {
#define MEMSWEEP_SLOT_ENUMERATOR(id, name) id,
  MEMSWEEP_SLOTS(MEMSWEEP_SLOT_ENUMERATOR)
#undef MEMSWEEP_SLOT_ENUMERATOR
};

// How many slots there are (callbacks included).
#define MEMSWEEP_SLOT_ONE(id, name) +1
inline constexpr size_t kSlotCount = 0 MEMSWEEP_SLOTS(MEMSWEEP_SLOT_ONE);
#undef MEMSWEEP_SLOT_ONE

// Slot names as written in experiment files ("allocator", ...), in hook order.
const std::vector<std::string>& SlotNames();
const char* SlotName(Slot slot);
bool ParseSlot(const std::string& name, Slot& slot);

// What a strategy sees at a stage. Pointers are null where they do not apply yet.
struct RunContext {
  model::Model* model = nullptr;  // from the model stage on
  int64_t step = -1;         // optimizer step, from 0
  int64_t micro_batch = -1;  // index within the step, for forward/backward
  data::Batch* batch = nullptr;
  at::Tensor* loss = nullptr;  // after forward
  // Records a figure of the strategy's own (seconds spent, bytes released ...). Figures with the
  // same name add up over the run; they are stored with the run's results.
  std::function<void(const std::string& name, double value)> record;
  // The run's process group when device.world_size > 1 (null in a single-process run).
  Communicator* comm = nullptr;
  // Host memory outside the device budget (offloaded state); always set.
  HostPool* host_pool = nullptr;
  // The experiment's seed ([experiment] seed): for a strategy's own random draws (a generator of
  // its own, so that the model's and the data's draws stay those of a run without it).
  uint64_t seed = 0;

  // Where the model, the batches and the activations live: cpu or cuda:N.
  // Strategies create their tensors with this device (e.g. at::zeros(n, p.options())).
  c10::Device device{c10::kCPU};
  // The allocator serving `device` (tracking allocator on cpu, CUDA caching allocator on cuda);
  // always set.
  DeviceMemory* device_memory = nullptr;
  // A precision strategy sets this in optimizer_step's begin hook to skip this step's update
  // (fp16 loss scaling found inf/NaN gradients); the host then neither clips nor updates, the
  // gradients are zeroed as usual, and the step is recorded as skipped. Reset every step.
  bool skip_optimizer_step = false;
  // Records a figure of this step (the fp16 loss scale ...): stored per step with the results,
  // beside the step's loss. The last value of a name within a step wins.
  std::function<void(const std::string& name, double value)> record_step;
  // The tensors the optimizer slot updates — the model's parameters, or a precision strategy's
  // fp32 master copies — from the optimizer stage on; null when the sharding slot owns the step
  // (it keeps reduced gradients of its own). Their .grad, read in a callback's optimizer_step
  // begin hook (callbacks run after every other slot's begin hook), are the gradients the update
  // will use, before clipping. Read them; changing them changes the run.
  const std::vector<at::Tensor>* optimizer_parameters = nullptr;
  // The global L2 norm of this step's gradients before clipping, as the update measured it: set
  // before optimizer_step's end hooks, NaN on a skipped step and before the first update.
  double grad_norm = std::numeric_limits<double>::quiet_NaN();
};

// Where a strategy acts: the beginning or end of a stage, or the model stage's per-group
// OnParametersBuilt.
enum class HookPoint : uint8_t { kBegin, kEnd, kParametersBuilt };
// "begin", "end", "parameters built": static strings.
const char* HookPointName(HookPoint point);

// One hook a strategy declares (Strategy::StageHooks): where it acts and what it does there, in
// a few words ("autocast to bf16 on"). kParametersBuilt goes with Stage::kModel.
struct StageHook {
  Stage stage = Stage::kEnvironment;
  HookPoint point = HookPoint::kBegin;
  std::string what;
};

class Strategy {
 public:
  virtual ~Strategy();
  virtual void OnStageBegin(Stage stage, RunContext& context);
  virtual void OnStageEnd(Stage stage, RunContext& context);
  // The model stage builds the model one group at a time — the embedding, each decoder block in
  // order, then the final norm and LM head — and calls this after each group, before the next
  // is built, on every strategy in the order of a stage's end (precision before sharding).
  // `built`: indices into context.model->Parameters() of the group's parameters, now
  // initialised (or loaded from [model] weights) and on the run's device. Parameters not built
  // yet are on the meta device: shape and dtype, no memory. A strategy that converts or
  // partitions parameters does it here, group by group, so the whole model never exists at once
  // in its initial form beside its converted or partitioned one (DeepSpeed's zero.Init).
  // OnStageEnd(model) follows once every group is built. Default: nothing.
  virtual void OnParametersBuilt(const std::vector<size_t>& built, RunContext& context);
  // True when the strategy leaves the training math unchanged (loss-equivalence checks).
  virtual bool MathPreserving() const;
  // Why this strategy cannot run on a device of this type ("" = it can), in
  // words that name the alternative: "a CPU kernel; on CUDA use plugin = \"sdpa\"". Asked at plan
  // time, after construction (so the answer may depend on the parameters).
  virtual std::string DeviceRefusal(c10::DeviceType device) const;
  // The hooks this strategy acts in, each with what it does there. The host calls OnStageBegin,
  // OnStageEnd and OnParametersBuilt only where these say, and `memsweep plan --stages` prints
  // them, so the listing is what runs. Asked once, after construction. std::nullopt (default):
  // every hook is called, at every stage, and the listing says the strategy declares none.
  virtual std::optional<std::vector<StageHook>> StageHooks() const;
};

class AllocatorStrategy : public Strategy {
 public:
  // The backend behind the CPU device's tracking allocator (asked on the CPU device only).
  virtual std::shared_ptr<memory::MemoryBackend> MakeBackend() = 0;
  // On a CUDA device: the CUDA caching allocator's settings, in
  // PYTORCH_ALLOC_CONF syntax ("expandable_segments:True,max_split_size_mb:128"); the host
  // applies them in the cell's worker before CUDA allocates anything. Default: "" (LibTorch's
  // defaults, or what PYTORCH_ALLOC_CONF in the environment says).
  virtual std::string DeviceAllocatorSettings() const;
};

class BatchingStrategy : public Strategy {
 public:
  // Sets micro_batch_size, accumulation_steps, seq_len and padding. Called once, when the cell
  // is validated, before any stage: the run (and `memsweep plan`, `estimate`) trains the
  // configuration it leaves.
  virtual void ConfigureBatches(data::DataConfig& config) = 0;
};

class PackingStrategy : public Strategy {
 public:
  virtual std::unique_ptr<data::BatchSource> MakeBatchSource(const data::DataConfig& config,
                                                             uint64_t seed) = 0;
};

class PrecisionStrategy : public Strategy {
 public:
  // The dtype the GEMMs run in: the GEMM calibration (MFU) measures this dtype.
  virtual c10::ScalarType ComputeDtype() const = 0;

  // The tensors the optimizer slot updates, asked once in the optimizer
  // stage with the model's parameters (after the model stage's end hooks, where a strategy may
  // have converted them, e.g. to bf16). Default: the parameters themselves. A strategy that
  // returns other tensors (fp32 master copies, in the same order) keeps them in step with the
  // model in its own hooks: gradients onto them at optimizer_step begin, values back to the
  // parameters at optimizer_step end. Clipping and the update act on the returned tensors;
  // the memory breakdown counts those that are not parameters as optimizer state and their
  // gradients as gradients (docs/metrics.md).
  virtual std::vector<at::Tensor> OptimizerParameters(
      const std::vector<at::Tensor>& model_parameters);

  // When the sharding slot owns the optimizer
  // step, the host asks this instead of OptimizerParameters, once, in the optimizer stage, and
  // passes the result to ShardingStrategy::AdoptOptimizerParameters — or, when the sharding
  // strategy adopts by group (ShardingStrategy::AdoptsOptimizerParametersByGroup), once per group
  // of the model stage with that group's parameters, passing the result to
  // AdoptGroupOptimizerParameters. The strategy gives the
  // tensors up: the sharding strategy keeps (its partition of) them, updates them and writes the
  // parameters, and this strategy's hooks must no longer move gradients onto them or copy them
  // back. Default: OptimizerParameters(model_parameters) when those are the parameters
  // themselves; a strategy that keeps other tensors (master copies) and does not override this
  // is refused with a std::logic_error naming the method.
  virtual std::vector<at::Tensor> HandOverOptimizerParameters(
      const std::vector<at::Tensor>& model_parameters);

  // True when the strategy may skip optimizer steps (RunContext::
  // skip_optimizer_step), after reading the gradients in .grad at optimizer_step begin. Such a
  // strategy is refused at plan time beside a sharding strategy that owns the optimizer step
  // (that one keeps reduced gradients of its own). Default: false.
  virtual bool SkipsSteps() const;
};

// What an adapter trains, known from the model's shapes alone (`memsweep plan`, no parameter
// built).
struct AdapterPlan {
  int64_t trainable_params = 0;  // the model's parameters that still train, plus the adapter's
  bool freezes_base = false;     // some of the model's parameters get no gradient
};

// A tensor an adapter adds to the model (AdaptGroup): trainable (requires_grad) like LoRA's
// factors, or frozen state such as quantisation constants. The host registers it with the
// group's decoder block (or the model), so it is one of Model::Parameters() and of the block's
// Parameters() (a checkpointed block passes it to its recompute), counted by the memory
// breakdown as trainable or frozen parameter bytes.
struct AdapterTensor {
  std::string name;  // unique within the block: "q_proj_lora_A"
  at::Tensor tensor;
};

class AdapterStrategy : public Strategy {
 public:
  // From the shapes alone (plan time): how many parameters train. Throws std::invalid_argument
  // with what to write instead when the model cannot be adapted as configured (a target module
  // it lacks, a rank above a layer's width); the host reports it with the plugin's table.
  virtual AdapterPlan Plan(const model::ModelShape& shape) const = 0;
  // Called by the host as each group of the model is built (the model stage), after its
  // parameters are initialised or loaded and moved to the device and before any strategy's
  // OnParametersBuilt: freezes what stops training (requires_grad_(false)), may store frozen
  // parameters differently (set_data: a narrower dtype, quantised codes), sets the forward of
  // the linear layers it adapts (Model::Linears) and returns the tensors it adds, on
  // context.device. The host then hands the group — its parameters and the added tensors — to
  // every strategy's OnParametersBuilt, so a precision strategy converts the adapter's factors
  // too (frozen parameters get no master copies).
  virtual std::vector<AdapterTensor> AdaptGroup(const std::vector<size_t>& built,
                                                RunContext& context) = 0;
};

class AttentionStrategy : public Strategy {
 public:
  virtual model::AttentionFn MakeAttention() = 0;
};

class KernelsStrategy : public Strategy {
 public:
  // Called once, in the model stage, before the checkpointing slot's block runner is made; the
  // model calls the functions in every forward (a checkpointed block's recompute included).
  virtual model::Kernels MakeKernels() = 0;
};

class CheckpointingStrategy : public Strategy {
 public:
  virtual model::BlockRunner MakeBlockRunner() = 0;
};

class LossStrategy : public Strategy {
 public:
  // Called once, in the model stage; the trainer calls the function once per micro-batch, in
  // the forward stage, and differentiates what it returns in the backward stage.
  virtual model::LossFn MakeLoss() = 0;
};

class OptimizerStrategy : public Strategy {
 public:
  // Called once, in the optimizer stage, when the host runs the update (the sharding slot does
  // not own it), with the tensors the update applies to: the trainable parameters, or the
  // precision slot's fp32 master copies of them (PrecisionStrategy::OptimizerParameters), in the
  // model's parameter order. Their gradients are in .grad() at every Step.
  virtual std::unique_ptr<Optimizer> MakeOptimizer(const std::vector<at::Tensor>& tensors) = 0;
};

// Tensors that make up the model state a rank holds (the memory breakdown's params, grads and
// optimizer figures count distinct storages of these).
struct ModelStateTensors {
  std::vector<at::Tensor> params, grads, optimizer;
};

class ShardingStrategy : public Strategy {
 public:
  // True: the host builds no optimizer; OptimizerStep updates the parameters (the strategy keeps
  // the optimizer state, e.g. only its partition) with memsweep's AdamW (memsweep/adamw_update.h),
  // the optimizer slot's default — validation refuses another optimizer plugin beside it. False:
  // the optimizer slot's update runs on whatever gradients the strategy's hooks left in the
  // parameters' .grad (all-reduced for ddp).
  virtual bool OwnsOptimizerStep() const;
  // Called inside the optimizer_step stage when OwnsOptimizerStep(): clip to spec.grad_clip by
  // the global norm over all ranks, apply AdamW, leave no gradient behind. Returns the global
  // gradient norm before clipping.
  virtual double OptimizerStep(RunContext& context, const OptimizerStepSpec& spec);
  // Adds the state the strategy holds outside the model's parameters and .grad (partitions,
  // flat buffers); the host adds the parameters and their .grad itself.
  virtual void AddModelState(ModelStateTensors& state) const;
  // Wraps the checkpointing slot's block runner (called once, in the model stage, after
  // MakeBlockRunner): e.g. gather a block's partitioned parameters before it runs and again
  // before its backward (a recompute included), free them after. Default: `inner` unchanged.
  virtual model::BlockRunner WrapBlockRunner(model::BlockRunner inner);
  // Called once in the optimizer stage when
  // OwnsOptimizerStep(), after the model stage, with what the precision slot handed over
  // (PrecisionStrategy::HandOverOptimizerParameters): the model's parameters themselves, or one
  // tensor per parameter, in the same order, that the update applies to instead (precision/bf16:
  // fp32 master copies of bf16 parameters). A strategy that takes master copies keeps what it
  // needs of them (its partition) and, after each update, writes the parameters from them.
  // Default: accepts the parameters themselves and refuses anything else (std::logic_error).
  virtual void AdoptOptimizerParameters(RunContext& context, std::vector<at::Tensor> updated);
  // True (with OwnsOptimizerStep()): the host hands the precision slot's tensors over group by
  // group while the model is built — right after each group's OnParametersBuilt hooks it calls
  // AdoptGroupOptimizerParameters with the group's parameter indices (`built`, as there) and
  // PrecisionStrategy::HandOverOptimizerParameters(the group's parameters) — instead of once in
  // the optimizer stage, so that master copies are partitioned before the next group exists and
  // no rank holds all of them. Default: false (AdoptOptimizerParameters in the optimizer stage).
  virtual bool AdoptsOptimizerParametersByGroup() const;
  // `updated[i]` is the tensor the update applies to for parameter built[i]: the parameter
  // itself, or its master copy. Default: std::logic_error (called only when the above is true).
  virtual void AdoptGroupOptimizerParameters(RunContext& context, const std::vector<size_t>& built,
                                             std::vector<at::Tensor> updated);
  // True when the strategy handles parameters without gradients (requires_grad false: the
  // frozen base of an adapter) — it leaves them alone and works on the trainable ones. False
  // (default): the host refuses a run whose adapter freezes parameters, at plan time.
  virtual bool SupportsFrozenParameters() const;
};
class CallbackStrategy : public Strategy {};

// True when `tensors` are `parameters` themselves, in the same order (not copies): what
// HandOverOptimizerParameters returns, and AdoptOptimizerParameters receives, when the precision
// strategy keeps no master copies.
bool AreTheParameters(const std::vector<at::Tensor>& tensors,
                      const std::vector<at::Tensor>& parameters);

}  // namespace memsweep
