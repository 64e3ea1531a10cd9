// packing/none: one document per row, right-padded (memsweep's Batcher).
#include <memory>

#include "memsweep/batcher.h"
#include "memsweep/plugin.h"

namespace {

class NoPacking final : public memsweep::PackingStrategy {
 public:
  // Math-preserving: one document per row, as the reference pipeline does.
  bool MathPreserving() const override { return true; }
  explicit NoPacking(const memsweep::PluginParams&) {}
  std::unique_ptr<memsweep::data::BatchSource> MakeBatchSource(
      const memsweep::data::DataConfig& config, uint64_t seed) override {
    return std::make_unique<memsweep::data::Batcher>(config, seed);
  }
  // No stage hooks: its batch source does the work.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }
};

}  // namespace

MEMSWEEP_PLUGIN(NoPacking, "none", "packing", "1.0.0",
                "One document per row, truncated to seq_len and right-padded", MEMSWEEP_NO_PARAMS,
                /*slot_default=*/1)
