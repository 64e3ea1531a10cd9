// packing/bucketed: length-bucketed dynamic batching under a token budget. Documents of similar
// length form a micro-batch of at most max_tokens positions, so the number of rows changes from
// one micro-batch to the next; the loss is normalised over the real tokens of the whole step.
#include <memory>
#include <stdexcept>
#include <string>

#include "bucketed_batch_source.h"
#include "memsweep/plugin.h"

namespace {

using memsweep::plugins::packing::BucketedBatchSource;
using memsweep::plugins::packing::BucketOptions;

const MemsweepParamSpec kParams[] = {
    {"max_tokens", MEMSWEEP_PARAM_INT, "0",
     "token budget of a micro-batch: rows x padded length <= max_tokens (0: micro_batch_size x "
     "seq_len, the positions of one max_length-padded micro-batch)",
     0},
    {"max_rows", MEMSWEEP_PARAM_INT, "0", "most rows in a micro-batch (0: no limit)", 0},
    {"boundaries", MEMSWEEP_PARAM_STRING, "\"\"",
     "increasing bucket upper bounds in positions, e.g. \"64,128,256\" (seq_len is always the "
     "last); \"\": powers of two from 32",
     0},
    {"pad_to_multiple", MEMSWEEP_PARAM_INT, "8",
     "round a micro-batch's row length up to a multiple of this (padding = \"longest\")", 0},
    {"long_documents", MEMSWEEP_PARAM_STRING, "\"truncate\"",
     "documents longer than seq_len + 1 tokens: \"truncate\" or \"split\" into pieces", 0},
};

BucketOptions ParseOptions(const memsweep::PluginParams& p) {
  BucketOptions options;
  options.max_tokens = p.Int("max_tokens");
  if (options.max_tokens < 0) {
    throw std::invalid_argument("max_tokens must be 0 (micro_batch_size x seq_len) or more");
  }
  options.max_rows = p.Int("max_rows");
  if (options.max_rows < 0) throw std::invalid_argument("max_rows must be 0 (no limit) or more");
  options.boundaries = memsweep::plugins::packing::ParseBoundaries(p.String("boundaries"));
  options.pad_to_multiple = p.Int("pad_to_multiple");
  if (options.pad_to_multiple < 1) throw std::invalid_argument("pad_to_multiple must be at least 1");
  const std::string& long_documents = p.String("long_documents");
  if (long_documents == "truncate") {
    options.long_documents = memsweep::data::LongDocuments::kTruncate;
  } else if (long_documents == "split") {
    options.long_documents = memsweep::data::LongDocuments::kSplit;
  } else {
    throw std::invalid_argument("long_documents = \"" + long_documents +
                                "\" is not one of: truncate, split");
  }
  return options;
}

class Bucketed final : public memsweep::PackingStrategy {
 public:
  explicit Bucketed(const memsweep::PluginParams& params) : options_(ParseOptions(params)) {}

  std::unique_ptr<memsweep::data::BatchSource> MakeBatchSource(
      const memsweep::data::DataConfig& config, uint64_t seed) override {
    auto source = std::make_unique<BucketedBatchSource>(config, seed, options_);
    source_ = source.get();
    return source;
  }

  // Each document's math is unchanged, but a step trains on a different number of documents
  // (a token budget, not a row count), which changes the optimisation like another batch size.
  bool MathPreserving() const override { return false; }

  // Rows per micro-batch vary: bucketed.documents / bucketed.micro_batches is their mean.
  void OnStageEnd(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    if (stage != memsweep::Stage::kRunEnd || source_ == nullptr) return;
    ctx.record("bucketed.documents", static_cast<double>(source_->DocumentsServed()));
    ctx.record("bucketed.micro_batches", static_cast<double>(source_->MicroBatchesServed()));
    source_ = nullptr;
  }
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{
        {memsweep::Stage::kRunEnd, memsweep::HookPoint::kEnd,
         "records the documents and micro-batches served"}};
  }

 private:
  BucketOptions options_;
  BucketedBatchSource* source_ = nullptr;  // owned by the run, alive until run_end has ended
};

}  // namespace

MEMSWEEP_PLUGIN(Bucketed, "bucketed", "packing", "1.0.0",
                "Length-bucketed dynamic batching: documents of similar length per micro-batch "
                "under a token budget (rows vary)",
                kParams, /*slot_default=*/0)
