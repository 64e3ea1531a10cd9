// packing/concat: naive concatenation of documents into seq_len rows (EOS as the separator), where
// documents attend to each other. Kept so that its effect can be measured: it is NOT equivalent
// to training on the documents separately, and says so (MathPreserving() is false).
#include <memory>

#include "concat_batch_source.h"
#include "memsweep/plugin.h"

namespace {

class Concat final : public memsweep::PackingStrategy {
 public:
  explicit Concat(const memsweep::PluginParams&) {}

  std::unique_ptr<memsweep::data::BatchSource> MakeBatchSource(
      const memsweep::data::DataConfig& config, uint64_t seed) override {
    return std::make_unique<memsweep::plugins::packing::ConcatBatchSource>(config, seed);
  }

  // Cross-document attention, positions that do not restart and EOS -> BOS targets change what
  // the model is trained on.
  bool MathPreserving() const override { return false; }
  // No stage hooks: its batch source does the work.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }
};

}  // namespace

MEMSWEEP_PLUGIN(Concat, "concat", "packing", "1.0.0",
                "Naive concatenation with EOS separators: documents attend to each other (not "
                "equivalent to unpacked training)",
                MEMSWEEP_NO_PARAMS, /*slot_default=*/0)
