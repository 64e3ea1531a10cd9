// attention/flash: a fused FlashAttention-2-style CPU kernel, forward and backward (online
// softmax over key tiles; only q, k, v, the output and the log-sum-exp kept for backward;
// grouped-query heads; packed batches as variable-length sequences). See README.md.
#include <stdexcept>
#include <string>

#include "flash_attention.h"
#include "memsweep/plugin.h"

namespace {

namespace flash = memsweep::plugins::flash;

constexpr int64_t kMaxTile = 1024;

int64_t CheckedTile(const memsweep::PluginParams& params, const char* name) {
  const int64_t value = params.Int(name);
  if (value < 0 || value > kMaxTile) {
    throw std::invalid_argument(std::string(name) + " = " + std::to_string(value) +
                                " is out of range: set 0 (sized for the L2 cache) or 1 to " +
                                std::to_string(kMaxTile) + " rows");
  }
  return value;
}

class FlashAttention final : public memsweep::AttentionStrategy {
 public:
  explicit FlashAttention(const memsweep::PluginParams& params)
      : tiles_{CheckedTile(params, "q_tile"), CheckedTile(params, "k_tile")} {}
  // The same attention as eager; only the summation order of the softmax differs.
  bool MathPreserving() const override { return true; }
  memsweep::model::AttentionFn MakeAttention() override { return flash::MakeFlashAttention(tiles_); }
  // A CPU kernel: on a GPU, ATen's own flash kernel does this job.
  std::string DeviceRefusal(c10::DeviceType device) const override {
    if (device == c10::kCPU) return "";
    return "attention/flash is a CPU kernel; on CUDA use plugin = \"sdpa\" (backend = \"flash\" "
           "for ATen's FlashAttention-2 kernel)";
  }

 private:
  flash::TileSizes tiles_;
};

const MemsweepParamSpec kParams[] = {
    {"q_tile", MEMSWEEP_PARAM_INT, "0",
     "query rows per tile (0 = the largest power of two from 16 to 128 whose tiles fit half the L2)",
     0},
    {"k_tile", MEMSWEEP_PARAM_INT, "0",
     "key rows per tile (0 = sized for the L2 cache like q_tile)", 0},
};

}  // namespace

MEMSWEEP_PLUGIN(FlashAttention, "flash", "attention", "1.0.0",
                "Fused flash attention kernel (online softmax, recompute in backward, varlen)",
                kParams, /*slot_default=*/0)
