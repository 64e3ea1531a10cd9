// packing/pack: documents bin-packed into rows of seq_len positions, each document confined to
// itself (position ids restart, segment ids mark it for the attention plugin, its targets never
// cross into the next document). Equivalent to one document per row, with less padding.
#include <memory>
#include <stdexcept>
#include <string>

#include "memsweep/plugin.h"
#include "packed_batch_source.h"

namespace {

using memsweep::plugins::packing::PackedBatchSource;
using memsweep::plugins::packing::PackOptions;
using memsweep::plugins::packing::RowLayout;

const MemsweepParamSpec kParams[] = {
    {"window", MEMSWEEP_PARAM_INT, "1000",
     "documents bin-packed together (taken in the seeded epoch order); larger fills rows better",
     0},
    {"algorithm", MEMSWEEP_PARAM_STRING, "\"ffd\"",
     "\"ffd\": first-fit decreasing; \"bfd\": best-fit decreasing", 0},
    {"long_documents", MEMSWEEP_PARAM_STRING, "\"truncate\"",
     "documents longer than seq_len + 1 tokens: \"truncate\" (as packing/none) or \"split\" into "
     "pieces that are packed as documents of their own",
     0},
    {"layout", MEMSWEEP_PARAM_STRING, "\"packed\"",
     "\"packed\"; \"padded\": the same documents per micro-batch, one per row (the unpacked "
     "reference for loss-equivalence checks)",
     0},
};

memsweep::data::LongDocuments ParseLongDocuments(const std::string& value) {
  if (value == "truncate") return memsweep::data::LongDocuments::kTruncate;
  if (value == "split") return memsweep::data::LongDocuments::kSplit;
  throw std::invalid_argument("long_documents = \"" + value +
                              "\" is not one of: truncate, split");
}

RowLayout ParseLayout(const std::string& value) {
  if (value == "packed") return RowLayout::kPacked;
  if (value == "padded") return RowLayout::kPadded;
  throw std::invalid_argument("layout = \"" + value + "\" is not one of: packed, padded");
}

PackOptions ParseOptions(const memsweep::PluginParams& p) {
  PackOptions options;
  options.window = p.Int("window");
  if (options.window < 1) throw std::invalid_argument("window must be at least 1 document");
  if (!memsweep::plugins::packing::ParsePackingAlgorithm(p.String("algorithm"),
                                                         options.algorithm)) {
    throw std::invalid_argument("algorithm = \"" + p.String("algorithm") +
                                "\" is not one of: ffd, bfd");
  }
  options.long_documents = ParseLongDocuments(p.String("long_documents"));
  options.layout = ParseLayout(p.String("layout"));
  return options;
}

class Pack final : public memsweep::PackingStrategy {
 public:
  explicit Pack(const memsweep::PluginParams& params) : options_(ParseOptions(params)) {}
  // Each document trains as if alone in its row: against layout = "padded" (the same documents
  // per step, one per row) the losses agree to fp32 rounding (README).
  bool MathPreserving() const override { return true; }

  std::unique_ptr<memsweep::data::BatchSource> MakeBatchSource(
      const memsweep::data::DataConfig& config, uint64_t seed) override {
    auto source = std::make_unique<PackedBatchSource>(config, seed, options_);
    source_ = source.get();
    return source;
  }

  // How full the rows were: documents per packed row is pack.documents / pack.rows.
  void OnStageEnd(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    if (stage != memsweep::Stage::kRunEnd || source_ == nullptr) return;
    ctx.record("pack.rows", static_cast<double>(source_->PackedRowsServed()));
    ctx.record("pack.documents", static_cast<double>(source_->DocumentsServed()));
    ctx.record("pack.windows", static_cast<double>(source_->WindowsPacked()));
    source_ = nullptr;
  }
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{
        {memsweep::Stage::kRunEnd, memsweep::HookPoint::kEnd,
         "records the packed rows, documents and windows served"}};
  }

 private:
  PackOptions options_;
  PackedBatchSource* source_ = nullptr;  // owned by the run, alive until run_end has ended
};

}  // namespace

MEMSWEEP_PLUGIN(Pack, "pack", "packing", "1.0.0",
                "Documents bin-packed into seq_len rows; attention and loss confined to each "
                "document (segment ids, restarting positions)",
                kParams, /*slot_default=*/0)
