// attention/chunked: causal attention over query blocks in ATen ops (scores of one block at a
// time, keys only up to the block's last row). See README.md.
#include <stdexcept>
#include <string>

#include "chunked_attention.h"
#include "memsweep/plugin.h"

namespace {

constexpr int64_t kMaxBlock = 65536;

class ChunkedAttention final : public memsweep::AttentionStrategy {
 public:
  explicit ChunkedAttention(const memsweep::PluginParams& params)
      : block_(params.Int("block_size")) {
    if (block_ < 1 || block_ > kMaxBlock) {
      throw std::invalid_argument("block_size = " + std::to_string(block_) +
                                  " is out of range: set 1 to " + std::to_string(kMaxBlock) +
                                  " query rows per block");
    }
  }
  // The same attention as eager; only the summation order of the softmax differs.
  bool MathPreserving() const override { return true; }
  memsweep::model::AttentionFn MakeAttention() override {
    return memsweep::plugins::MakeChunkedAttention(block_);
  }
  // No stage hooks: its attention function does the work.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }

 private:
  int64_t block_;
};

const MemsweepParamSpec kParams[] = {
    {"block_size", MEMSWEEP_PARAM_INT, "128", "query rows per block", 0}};

}  // namespace

MEMSWEEP_PLUGIN(ChunkedAttention, "chunked", "attention", "1.0.0",
                "Query blocks in ATen ops: causal (and per-document) scores one block at a time",
                kParams, /*slot_default=*/0)
