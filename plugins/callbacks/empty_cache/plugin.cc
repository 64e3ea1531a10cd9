// callbacks/empty_cache: every N optimizer steps, give the allocator's cached, unused memory
// back to the device (torch.cuda.empty_cache() in the studies memsweep reproduces), and record
// what it cost (seconds) and what it released (reserved bytes). On a CUDA device it is the real
// emptyCache of LibTorch's caching allocator; on the CPU the simulated backend's.
#include <chrono>
#include <stdexcept>
#include <string>

#include "memsweep/plugin.h"

namespace {

const MemsweepParamSpec kParams[] = {
    {"every", MEMSWEEP_PARAM_INT, "10", "empty the cache after every N-th optimizer step", 0},
};

class EmptyCache final : public memsweep::CallbackStrategy {
 public:
  // Math-preserving: releases unused cached memory; no tensor changes.
  bool MathPreserving() const override { return true; }
  explicit EmptyCache(const memsweep::PluginParams& params) : every_(params.Int("every")) {
    if (every_ < 1) throw std::invalid_argument("every must be at least 1");
  }

  void OnStageEnd(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    if (stage != memsweep::Stage::kStepEnd || (ctx.step + 1) % every_ != 0) return;
    // With several ranks a barrier goes before and after (sharding slot); one process needs none.
    memsweep::DeviceMemory& memory = *ctx.device_memory;
    const int64_t reserved_before = memory.ReservedBytes();
    const auto start = std::chrono::steady_clock::now();
    memory.EmptyCache();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ctx.record("empty_cache.calls", 1.0);
    ctx.record("empty_cache.seconds", seconds);
    ctx.record("empty_cache.released_bytes",
               static_cast<double>(reserved_before - memory.ReservedBytes()));
  }
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    const std::string steps = every_ == 1 ? "step" : std::to_string(every_) + " steps";
    return std::vector<memsweep::StageHook>{
        {memsweep::Stage::kStepEnd, memsweep::HookPoint::kEnd,
         "empties the allocator's cache every " + steps + "; records time and bytes freed"}};
  }

 private:
  int64_t every_;
};

}  // namespace

MEMSWEEP_PLUGIN(EmptyCache, "empty_cache", "callbacks", "1.0.0",
                "Releases the allocator's cached memory every N steps; records cost and effect",
                kParams, /*slot_default=*/0)
