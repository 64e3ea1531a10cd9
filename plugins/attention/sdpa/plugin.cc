// attention/sdpa: attention through LibTorch's scaled-dot-product-attention kernels, the one
// `backend` names or the one at::scaled_dot_product_attention picks (sdpa_attention.h). Which
// kernel ran is recorded per call: plugin metrics sdpa.calls.<kernel>.
#include <stdexcept>
#include <string>

#include "memsweep/plugin.h"
#include "sdpa_attention.h"

namespace {

using memsweep::plugins::SdpaAttention;
using memsweep::plugins::SdpaBackend;

SdpaBackend CheckedBackend(const memsweep::PluginParams& params) {
  const std::string name = params.String("backend");
  if (auto backend = memsweep::plugins::ParseSdpaBackend(name)) return *backend;
  throw std::invalid_argument("backend = \"" + name +
                              "\" is not a kernel: use \"auto\", \"flash\", \"efficient\", "
                              "\"cudnn\" or \"math\"");
}

class Sdpa final : public memsweep::AttentionStrategy {
 public:
  explicit Sdpa(const memsweep::PluginParams& params) : backend_(CheckedBackend(params)) {}
  // The same attention as eager; only the summation order of the softmax differs.
  bool MathPreserving() const override { return true; }
  std::string DeviceRefusal(c10::DeviceType device) const override {
    if (device == c10::kCPU &&
        (backend_ == SdpaBackend::kEfficient || backend_ == SdpaBackend::kCudnn)) {
      return std::string("backend = \"") + memsweep::plugins::SdpaBackendName(backend_) +
             "\" is a CUDA kernel; on the CPU use backend = \"flash\", \"math\" or \"auto\"";
    }
    return "";
  }
  memsweep::model::AttentionFn MakeAttention() override {
    attention_ = SdpaAttention(backend_);
    SdpaAttention attention = attention_;
    return [attention](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const memsweep::model::AttentionInputs& inputs) mutable {
      return attention(q, k, v, inputs);
    };
  }
  void OnStageBegin(memsweep::Stage stage, memsweep::RunContext& ctx) override {
    if (stage != memsweep::Stage::kRunEnd || !ctx.record) return;
    for (const auto& [kernel, calls] : attention_.Calls()) {
      ctx.record("sdpa.calls." + kernel, static_cast<double>(calls));
    }
  }
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{
        {memsweep::Stage::kRunEnd, memsweep::HookPoint::kBegin,
         "records the calls per SDPA kernel (sdpa.calls.<kernel>)"}};
  }

 private:
  SdpaBackend backend_;
  SdpaAttention attention_;
};

const MemsweepParamSpec kParams[] = {
    {"backend", MEMSWEEP_PARAM_STRING, "\"auto\"",
     "the kernel: auto (LibTorch picks), flash, efficient (CUDA), cudnn (CUDA), math", 0},
};

}  // namespace

MEMSWEEP_PLUGIN(Sdpa, "sdpa", "attention", "1.2.0",
                "LibTorch's scaled_dot_product_attention kernels: auto, flash, efficient, cudnn, "
                "math; records which ran",
                kParams, /*slot_default=*/0)
