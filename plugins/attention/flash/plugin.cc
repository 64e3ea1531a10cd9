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

// The instruction set named by `isa`, resolved ("auto" → the best this CPU runs) and checked
// against the CPU.
flash::Isa CheckedIsa(const memsweep::PluginParams& params) {
  const std::string name = params.String("isa");
  const auto isa = flash::ParseIsa(name);
  if (!isa) {
    throw std::invalid_argument("isa = \"" + name +
                                "\" is not an instruction set: use \"auto\", \"avx512\", "
                                "\"avx2\" or \"baseline\"");
  }
  return flash::TileOpsFor(*isa).isa;  // throws, naming what this CPU runs, when it cannot
}

class FlashAttention final : public memsweep::AttentionStrategy {
 public:
  explicit FlashAttention(const memsweep::PluginParams& params)
      : tiles_{CheckedTile(params, "q_tile"), CheckedTile(params, "k_tile")},
        isa_(CheckedIsa(params)) {}
  // The same attention as eager; only the summation order of the softmax differs.
  bool MathPreserving() const override { return true; }
  memsweep::model::AttentionFn MakeAttention() override {
    return flash::MakeFlashAttention(tiles_, isa_);
  }
  // Which instruction set ran: plugin metric flash.isa.<name> = 1.
  void OnStageBegin(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    if (stage == memsweep::Stage::kRunEnd && ctx.record) {
      ctx.record(std::string("flash.isa.") + flash::IsaName(isa_), 1.0);
    }
  }
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{
        {memsweep::Stage::kRunEnd, memsweep::HookPoint::kBegin,
         std::string("records the instruction set that ran (flash.isa.") + flash::IsaName(isa_) +
             ")"}};
  }
  // A CPU kernel: on a GPU, ATen's own flash kernel does this job.
  std::string DeviceRefusal(c10::DeviceType device) const override {
    if (device == c10::kCPU || device == c10::kMeta) return "";  // meta: memsweep estimate
    return "attention/flash is a CPU kernel; on CUDA use plugin = \"sdpa\" (backend = \"flash\" "
           "for ATen's FlashAttention-2 kernel)";
  }

 private:
  flash::TileSizes tiles_;
  flash::Isa isa_;
};

const MemsweepParamSpec kParams[] = {
    {"q_tile", MEMSWEEP_PARAM_INT, "0",
     "query rows per tile (0 = the largest power of two from 16 to 128 whose tiles fit half the L2)",
     0},
    {"k_tile", MEMSWEEP_PARAM_INT, "0",
     "key rows per tile (0 = sized for the L2 cache like q_tile)", 0},
    {"isa", MEMSWEEP_PARAM_STRING, "\"auto\"",
     "instruction set of the tile kernels: auto (the best this CPU and LibTorch's level allow), "
     "avx512, avx2, baseline",
     0},
};

}  // namespace

MEMSWEEP_PLUGIN(FlashAttention, "flash", "attention", "1.1.0",
                "Fused flash attention kernel (online softmax, recompute in backward, varlen)",
                kParams, /*slot_default=*/0)
