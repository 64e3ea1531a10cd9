// callbacks/peak-logger: every `every` optimizer steps, records the tracking allocator's
// allocated bytes at the end of the step, and the largest such value over the run.
#include <algorithm>

#include "memsweep/plugin.h"

namespace {

const MemsweepParamSpec kParams[] = {
    {"every", MEMSWEEP_PARAM_INT, "1", "record every N optimizer steps", 0},
};

class PeakLogger final : public memsweep::CallbackStrategy {
 public:
  explicit PeakLogger(const memsweep::PluginParams& params) : every_(params.Int("every")) {}

  void OnStageEnd(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    if (stage != memsweep::Stage::kStepEnd || (ctx.step + 1) % every_ != 0) return;
    ctx.record("peak_logger.samples", 1.0);
    largest_ = std::max(largest_, ctx.tracker->WindowPeakBytes());
  }

  void OnStageBegin(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    if (stage == memsweep::Stage::kRunEnd) {
      ctx.record("peak_logger.largest_step_end_bytes", static_cast<double>(largest_));
    }
  }

 private:
  int64_t every_;
  int64_t largest_ = 0;
};

}  // namespace

MEMSWEEP_PLUGIN(PeakLogger, "peak-logger", "callbacks", "0.1.0",
                "Samples allocated bytes at the end of every N-th step", kParams,
                /*slot_default=*/0)
