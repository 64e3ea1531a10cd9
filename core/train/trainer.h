// Trainer: one training run of a RunConfig, measured. The loop reads top to bottom like llm.c's
// training step, with each named stage (stage.h) marked where it begins and ends:
//
//   environment   threads, GEMM path, device budget, GEMM calibration
//   model         build the Llama decoder (seeded)
//   data          load and tokenize the corpus, set up batching
//   optimizer     AdamW + warm-up/cosine schedule
//   per step:     step_begin (lr, next micro-batches) → forward/backward per micro-batch →
//                 optimizer_step (clip, update, zero grads) → step_end (record)
//   run_end       summary
//
// An allocation beyond the device budget ends the run with status "oom" (not an exception):
// the result names the stage and the failed request, and all of the run's memory is released
// before Run returns.
//
//   Trainer trainer(config);
//   RunResult result = trainer.Run();
#pragma once

#include <functional>

#include "core/config/run_config.h"
#include "core/train/run_result.h"
#include "core/train/stage.h"

namespace memsweep::train {

// Called with each step's record as soon as the step ends (progress display, streaming writers).
using StepCallback = std::function<void(const StepRecord&)>;

class Trainer {
 public:
  explicit Trainer(config::RunConfig config);

  void OnStep(StepCallback callback) { on_step_ = std::move(callback); }
  // Runs the whole configuration. Budget OOMs give status kOom, other errors kFailed.
  RunResult Run();

 private:
  config::RunConfig config_;
  StepCallback on_step_;
};

}  // namespace memsweep::train
