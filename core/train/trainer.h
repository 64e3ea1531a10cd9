// Trainer: one training run of a RunConfig, measured. The loop reads top to bottom like llm.c's
// training step, with each named stage (stage.h) marked where it begins and ends:
//
//   environment   threads, device (cpu or cuda:N), device budget, memory backend or CUDA
//                 allocator settings (allocator slot)
//   model         build the Llama decoder (seeded); attention and block runner from their slots
//   data          batch shape (the batching slot configured it at validation), batch source
//                 (packing slot)
//   optimizer     AdamW + warm-up/cosine schedule
//   per step:     step_begin (lr, next micro-batches) → forward/backward per micro-batch →
//                 optimizer_step (clip, update, zero grads) → step_end (record)
//   run_end       summary
//
// Every strategy's hooks run at the beginning and end of each stage (memsweep/strategy.h).
// An allocation beyond the device budget ends the run with status "oom" (not an exception):
// the result names the stage and the failed request, and all of the run's memory is released
// before Run returns. An exception from a strategy ends it with status "failed", naming the
// plugin.
//
//   Trainer trainer(config, config::InstantiateStrategies(config));
//   RunResult result = trainer.Run();
#pragma once

#include <c10/core/Device.h>

#include <functional>

#include "core/config/run_config.h"
#include "core/comm/process_group.h"
#include "core/plugin/active_strategy.h"
#include "core/train/run_result.h"
#include "memsweep/stage.h"

namespace memsweep::train {

using plugin::ActiveStrategy;  // the strategies a run uses (core/plugin/active_strategy.h)
using plugin::StrategySet;

// Called with each step's record as soon as the step ends (progress display, streaming writers).
using StepCallback = std::function<void(const StepRecord&)>;

class Trainer {
 public:
  Trainer(config::RunConfig config, StrategySet strategies);

  void OnStep(StepCallback callback) { on_step_ = std::move(callback); }
  // This rank's process group in a run of device.world_size ranks (not owned; may be null).
  void SetCommunicator(dist::CountingCommunicator* comm) { comm_ = comm; }
  // The CUDA device of this rank (LOCAL_RANK); default: [device] index.
  void SetDeviceIndex(int index) { device_index_ = index; }
  // Records the run's allocation history, keeping the latest `max_entries` events (0 = none),
  // into RunResult::memory_snapshot: from the start of the measured run to its end.
  void RecordMemoryHistory(int64_t max_entries) { memory_history_ = max_entries; }
  // cpu, or cuda:N for a run with [device] type = "cuda".
  c10::Device RunDevice() const;
  // Runs the whole configuration. Budget OOMs give status kOom, other errors kFailed.
  RunResult Run();

 private:
  config::RunConfig config_;
  StrategySet strategies_;
  StepCallback on_step_;
  dist::CountingCommunicator* comm_ = nullptr;
  int device_index_ = -1;
  int64_t memory_history_ = 0;
};

}  // namespace memsweep::train
