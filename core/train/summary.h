// Turns per-step records into the run's throughput figures (docs/metrics.md).
//
//   FillThroughput(steps, /*warmup_steps=*/2, model_config, peak_flops, summary);
#pragma once

#include <functional>
#include <vector>

#include "core/model/llama_config.h"
#include "core/train/run_result.h"

namespace memsweep::train {

// Percentile by linear interpolation between closest ranks (q in [0, 1]); 0 for no values.
double Percentile(std::vector<double> values, double q);

// Fills tokens_per_s, step times, flops_per_token, mfu, final_loss and padding_fraction from
// the steps after `warmup_steps` (all steps when there are no others).
// The attention term of flops_per_token uses the mean row length of the measured steps
// (positions / rows), so sources whose row count changes from step to step are counted right.
void FillThroughput(const std::vector<StepRecord>& steps, int64_t warmup_steps,
                    const model::LlamaConfig& model, double peak_flops, RunSummary& summary);

// A run whose MFU is above 1 ran its products faster than the calibrated GEMM peak, which was
// then measured low (on a busy machine): `remeasure` (unset: not possible here) measures the
// peak again and returns the figure kept afterwards. A higher one replaces peak_flops and the
// MFU (peak_flops_check "remeasured"); an MFU still above 1 is marked "above_peak".
void CheckMfuAgainstPeak(RunSummary& summary, const std::function<double()>& remeasure);

}  // namespace memsweep::train
