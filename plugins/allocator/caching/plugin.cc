// allocator/caching: the CUDA caching allocator's options. On a CUDA device they are applied to
// LibTorch's real allocator (PYTORCH_ALLOC_CONF syntax, before CUDA initialises); on the CPU a
// memory backend emulates that allocator (segments, pools, block splitting and reuse, the same
// options), so reserved bytes, fragmentation and cache-flush retries can be measured without a
// GPU. See README.md.
#include <memory>

#include "caching_backend.h"
#include "memsweep/plugin.h"

namespace {

using memsweep::plugins::CachingBackend;
using memsweep::plugins::CachingOptions;

const MemsweepParamSpec kParams[] = {
    {"max_split_size_mb", MEMSWEEP_PARAM_INT, "-1",
     "blocks of this many MiB or more are never split (-1 = unlimited; else > 20)", 0},
    {"roundup_power2_divisions", MEMSWEEP_PARAM_INT, "0",
     "round request sizes up to this many divisions between powers of two (0 = off)", 0},
    {"garbage_collection_threshold", MEMSWEEP_PARAM_FLOAT, "0.0",
     "fraction of the budget above which cached unused segments are freed, oldest first (0 = off)",
     0},
    {"expandable_segments", MEMSWEEP_PARAM_BOOL, "false",
     "one segment per pool that grows in place instead of new fixed-size segments", 0},
};

class CachingAllocator final : public memsweep::AllocatorStrategy {
 public:
  // Math-preserving: only where tensors live changes, never their values.
  bool MathPreserving() const override { return true; }
  explicit CachingAllocator(const memsweep::PluginParams& params)
      : options_(CachingOptions::FromParams(params.Int("max_split_size_mb"),
                                            params.Int("roundup_power2_divisions"),
                                            params.Float("garbage_collection_threshold"),
                                            params.Bool("expandable_segments"))) {}

  std::string DeviceAllocatorSettings() const override { return options_.AllocatorConf(); }
  std::shared_ptr<memsweep::memory::MemoryBackend> MakeBackend() override {
    backend_ = std::make_shared<CachingBackend>(options_);
    return backend_;
  }

  void OnStageBegin(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    if (stage != memsweep::Stage::kRunEnd || !backend_ || !ctx.record) return;
    const auto& s = backend_->Stats();
    ctx.record("caching.segments_peak", static_cast<double>(s.segments_peak));
    ctx.record("caching.segments_created", static_cast<double>(s.segments_created));
    ctx.record("caching.segments_released", static_cast<double>(s.segments_released));
    ctx.record("caching.retries", static_cast<double>(s.retries));
    ctx.record("caching.gc_runs", static_cast<double>(s.gc_runs));
    ctx.record("caching.gc_released_bytes", static_cast<double>(s.gc_released_bytes));
    ctx.record("caching.cache_hits", static_cast<double>(s.cache_hits));
    ctx.record("caching.peak_reserved_bytes", static_cast<double>(s.peak_reserved_bytes));
    ctx.record("caching.allocated_at_peak_bytes", static_cast<double>(s.allocated_at_peak_bytes));
    ctx.record("caching.fragmentation_at_peak", s.FragmentationAtPeak());
  }
  // On a CUDA device no backend is made: LibTorch's allocator reports for itself.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{
        {memsweep::Stage::kRunEnd, memsweep::HookPoint::kBegin,
         "records the emulated allocator's segments, retries and fragmentation (CPU device)"}};
  }

 private:
  CachingOptions options_;
  std::shared_ptr<CachingBackend> backend_;
};

}  // namespace

MEMSWEEP_PLUGIN(CachingAllocator, "caching", "allocator", "1.0.0",
                "PyTorch's CUDA caching allocator options: the real allocator on CUDA, its emulation "
                "on the CPU (segments, pools, split/reuse; reserved >= allocated)",
                kParams, /*slot_default=*/0)
