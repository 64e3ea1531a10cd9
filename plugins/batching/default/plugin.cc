// batching/default: fixed-size micro-batches, gradient accumulation, truncation to seq_len and
// padding to the longest row or to seq_len.
#include <stdexcept>
#include <string>

#include "memsweep/data_config.h"
#include "memsweep/plugin.h"

namespace {

// The defaults are DataConfig's (memsweep/data_config.h), as text for the schema.
#define BATCHING_TEXT(x) #x
#define BATCHING_DEFAULT(x) BATCHING_TEXT(x)

const MemsweepParamSpec kParams[] = {
    {"micro_batch_size", MEMSWEEP_PARAM_INT, BATCHING_DEFAULT(MEMSWEEP_DEFAULT_MICRO_BATCH_SIZE),
     "rows per forward/backward pass", 0},
    {"accumulation_steps", MEMSWEEP_PARAM_INT,
     BATCHING_DEFAULT(MEMSWEEP_DEFAULT_ACCUMULATION_STEPS),
     "micro-batches per optimizer step (effective batch = micro_batch_size x this)", 0},
    {"seq_len", MEMSWEEP_PARAM_INT, BATCHING_DEFAULT(MEMSWEEP_DEFAULT_SEQ_LEN),
     "maximum tokens per row; longer documents are truncated (max_seq_length)", 0},
    {"padding", MEMSWEEP_PARAM_STRING, "\"longest\"",
     "\"longest\": pad each micro-batch to its longest row; \"max_length\": always to seq_len", 0},
};

class FixedBatching final : public memsweep::BatchingStrategy {
 public:
  // Math-preserving: micro-batches x accumulation at an equal effective batch give the same
  // update (the loss is normalised over the effective batch's real tokens); a different
  // effective batch changes the tokens per step, which verification reports as a
  // configuration difference.
  bool MathPreserving() const override { return true; }
  explicit FixedBatching(const memsweep::PluginParams& p)
      : micro_batch_size_(p.Int("micro_batch_size")),
        accumulation_steps_(p.Int("accumulation_steps")),
        seq_len_(p.Int("seq_len")),
        padding_(p.String("padding")) {
    if (micro_batch_size_ < 1) throw std::invalid_argument("micro_batch_size must be at least 1");
    if (accumulation_steps_ < 1) {
      throw std::invalid_argument("accumulation_steps must be at least 1");
    }
    if (seq_len_ < 1) throw std::invalid_argument("seq_len must be at least 1");
    if (padding_ != "longest" && padding_ != "max_length") {
      throw std::invalid_argument("padding = \"" + padding_ +
                                  "\" is not one of: longest, max_length");
    }
  }

  void ConfigureBatches(memsweep::data::DataConfig& config) override {
    config.micro_batch_size = micro_batch_size_;
    config.accumulation_steps = accumulation_steps_;
    config.seq_len = seq_len_;
    config.padding = padding_ == "longest" ? memsweep::data::Padding::kLongest
                                           : memsweep::data::Padding::kMaxLength;
  }
  // No stage hooks: ConfigureBatches is all it does.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }

 private:
  int64_t micro_batch_size_, accumulation_steps_, seq_len_;
  std::string padding_;
};

}  // namespace

MEMSWEEP_PLUGIN(FixedBatching, "default", "batching", "1.0.0",
                "Fixed micro-batches with gradient accumulation, truncation and padding", kParams,
                /*slot_default=*/1)
