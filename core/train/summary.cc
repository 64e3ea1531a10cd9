#include "core/train/summary.h"

#include <algorithm>
#include <cmath>

namespace memsweep::train {

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = q * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

void FillThroughput(const std::vector<StepRecord>& steps, int64_t warmup_steps,
                    const model::LlamaConfig& model, double peak_flops, RunSummary& summary) {
  summary.steps_completed = static_cast<int64_t>(steps.size());
  if (steps.empty()) return;
  const size_t first = static_cast<int64_t>(steps.size()) > warmup_steps
                           ? static_cast<size_t>(warmup_steps)
                           : 0;
  std::vector<double> times;
  double seconds = 0.0;
  int64_t tokens = 0, positions = 0, rows = 0, all_tokens = 0, all_positions = 0, all_rows = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    all_tokens += steps[i].tokens;
    all_positions += steps[i].positions;
    all_rows += steps[i].rows;
    summary.row_length_max = std::max(summary.row_length_max, steps[i].longest_row);
    if (i < first) continue;
    times.push_back(steps[i].seconds);
    seconds += steps[i].seconds;
    tokens += steps[i].tokens;
    positions += steps[i].positions;
    rows += steps[i].rows;
  }
  summary.measured_steps = static_cast<int64_t>(times.size());
  summary.tokens_per_s = seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0;
  summary.step_time_median_s = Percentile(times, 0.5);
  summary.step_time_p90_s = Percentile(times, 0.9);
  // T in the attention term: the mean length of the rows the model actually ran on.
  const int64_t mean_row =
      rows > 0 ? std::llround(static_cast<double>(positions) / static_cast<double>(rows)) : 0;
  summary.flops_per_token =
      model.TrainingFlopsPerToken(mean_row) + summary.flops_per_token_adjustment;
  summary.peak_flops = peak_flops;
  summary.mfu = peak_flops > 0 ? summary.tokens_per_s * summary.flops_per_token / peak_flops : 0.0;
  summary.final_loss = steps.back().loss;
  summary.padding_fraction =
      all_positions > 0 ? 1.0 - static_cast<double>(all_tokens) / all_positions : 0.0;
  summary.parameters = model.ParameterCount();
  if (all_rows > 0) {
    summary.row_length_mean = static_cast<double>(all_positions) / static_cast<double>(all_rows);
    summary.tokens_per_row = static_cast<double>(all_tokens) / static_cast<double>(all_rows);
  }
}

void CheckMfuAgainstPeak(RunSummary& summary, const std::function<double()>& remeasure) {
  if (!(summary.mfu > 1.0)) return;
  double again = 0.0;
  if (remeasure) {
    try {
      again = remeasure();
    } catch (const std::exception&) {
      again = 0.0;  // the figure stays, marked below
    }
  }
  if (again > summary.peak_flops) {
    summary.peak_flops = again;
    summary.mfu = summary.tokens_per_s * summary.flops_per_token / again;
    summary.peak_flops_check = "remeasured";
  }
  if (summary.mfu > 1.0) summary.peak_flops_check = "above_peak";
}

}  // namespace memsweep::train
