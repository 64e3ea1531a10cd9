// adapter/qlora: QLoRA (Dettmers et al., 2023): LoRA factors (common/lora_adapter.h) over a base
// whose linear layers are stored in NF4 (nf4.h, bitsandbytes' format: 4-bit codes in blocks of
// 64, double-quantised absmax: ≈ 0.516 bytes per weight) and applied in `compute_dtype`
// (nf4_linear.h). Each layer is quantised as soon as its block is built, so the run never holds
// the full-precision base beside its NF4 copy. The frozen parameters that are not quantised (the
// norms, the embedding and the LM head, as bitsandbytes leaves them) are stored in `base_dtype`.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <map>
#include <memory>
#include <stdexcept>

#include "../common/lora_adapter.h"
#include "../common/lora_linear.h"
#include "../common/lora_targets.h"
#include "memsweep/plugin.h"
#include "nf4.h"
#include "nf4_linear.h"

namespace {

using memsweep::plugins::adapter::BaseStore;
using memsweep::plugins::adapter::DtypeParam;
using memsweep::plugins::adapter::LoraAdapter;
using memsweep::plugins::adapter::Nf4Weight;

const MemsweepParamSpec kParams[] = {
    MEMSWEEP_LORA_PARAM_SPECS,
    {"compute_dtype", MEMSWEEP_PARAM_STRING, "\"bf16\"",
     "dtype the base's products run in (bnb_4bit_compute_dtype): bf16, fp16 or fp32", 0},
    {"quantize", MEMSWEEP_PARAM_STRINGS, "\"all-linear\"",
     "modules stored in NF4: PEFT module names or \"all-linear\" (the decoder's linear layers; "
     "the embedding and LM head are not quantised)", 0},
    {"double_quant", MEMSWEEP_PARAM_BOOL, "true",
     "quantise the absmax values too (bnb_4bit_use_double_quant)", 0},
    {"base_dtype", MEMSWEEP_PARAM_STRING, "\"bf16\"",
     "dtype of the frozen parameters it does not quantise (norms, embedding, LM head): fp32, "
     "bf16 or fp16", 0},
};

class Qlora final : public memsweep::AdapterStrategy {
 public:
  explicit Qlora(const memsweep::PluginParams& params)
      : lora_(params),
        compute_(DtypeParam("compute_dtype", params.String("compute_dtype"))),
        base_dtype_(DtypeParam("base_dtype", params.String("base_dtype"))),
        quantize_(params.Strings("quantize")),
        double_quant_(params.Bool("double_quant")) {}

  bool MathPreserving() const override { return false; }

  std::string DeviceRefusal(c10::DeviceType device) const override {
    if (device == c10::kCPU && (compute_ == at::kHalf || base_dtype_ == at::kHalf)) {
      return "fp16 needs a CUDA device (the CPU's fp16 products are not training kernels); on "
             "the CPU use compute_dtype and base_dtype = \"bf16\" or \"fp32\"";
    }
    return "";
  }

  memsweep::AdapterPlan Plan(const memsweep::model::ModelShape& shape) const override {
    QuantizedModules(shape);  // refuses a module the model lacks
    return lora_.Plan(shape);
  }

  std::vector<memsweep::AdapterTensor> AdaptGroup(const std::vector<size_t>& built,
                                                  memsweep::RunContext& ctx) override {
    if (quantized_.empty()) quantized_ = QuantizedModules(ctx.model->Shape());
    std::vector<memsweep::AdapterTensor> added = Quantize(built, ctx);
    const c10::ScalarType stored = base_dtype_;
    BaseStore base;
    base.store = [stored](at::Tensor& frozen) {
      if (frozen.is_floating_point() && frozen.scalar_type() != stored) {
        frozen.set_data(frozen.to(stored));
      }
    };
    base.forward = [this](memsweep::model::LinearLayer& layer) -> memsweep::model::LinearFn {
      auto found = forwards_.find(&layer);
      if (found != forwards_.end()) return found->second;
      return memsweep::plugins::adapter::FrozenLinear;
    };
    std::vector<memsweep::AdapterTensor> factors = lora_.AdaptGroup(built, ctx, base);
    added.insert(added.end(), factors.begin(), factors.end());
    return added;
  }
  // No stage hooks: it works in AdaptGroup, as each group is built.
  std::optional<std::vector<memsweep::StageHook>> StageHooks() const override {
    return std::vector<memsweep::StageHook>{};
  }

 private:
  // quantize as module names: "all-linear" is every module of the blocks.
  std::vector<std::string> QuantizedModules(const memsweep::model::ModelShape& shape) const {
    const std::vector<std::string> available =
        memsweep::plugins::adapter::LinearModuleNames(shape);
    if (quantize_.size() == 1 && quantize_[0] == "all-linear") return available;
    for (const std::string& m : quantize_) {
      if (std::find(available.begin(), available.end(), m) == available.end()) {
        std::string names;
        for (const std::string& a : available) names += (names.empty() ? "\"" : ", \"") + a + "\"";
        throw std::invalid_argument("quantize: this model (" + shape.model_type +
                                    ") has no module \"" + m + "\"; its linear modules are " +
                                    names + " (or write \"all-linear\")");
      }
    }
    return quantize_;
  }

  // The group's linear layers in `quantized_`: each weight replaced by its NF4 codes (the same
  // parameter, frozen), the absmax state added beside it, its forward the NF4 product.
  std::vector<memsweep::AdapterTensor> Quantize(const std::vector<size_t>& built,
                                                memsweep::RunContext& ctx) {
    const std::vector<at::Tensor> all = ctx.model->Parameters();
    std::vector<memsweep::AdapterTensor> added;
    for (memsweep::model::LinearLayer* layer : ctx.model->Linears()) {
      if (layer->shape.block < 0 ||
          std::find(quantized_.begin(), quantized_.end(), layer->shape.module) == quantized_.end()) {
        continue;
      }
      bool in_group = false;
      for (size_t i : built) in_group |= all[i].is_same(layer->weight);
      if (!in_group) continue;
      at::NoGradGuard no_grad;
      auto q = std::make_shared<Nf4Weight>(
          memsweep::plugins::adapter::QuantizeNf4(layer->weight, double_quant_));
      layer->weight.requires_grad_(false);
      layer->weight.set_data(q->codes);
      q->codes = layer->weight;  // the parameter itself holds the codes
      const std::string name = layer->shape.name + "_nf4_";
      if (q->absmax_codes.defined()) added.push_back({name + "absmax", q->absmax_codes});
      added.push_back({name + (q->absmax_codes.defined() ? "absmax_scales" : "absmax"),
                       q->absmax_scales});
      if (q->offset.defined()) added.push_back({name + "offset", q->offset});
      const c10::ScalarType compute = compute_;
      memsweep::model::LinearFn fn = [q, compute](const at::Tensor& x, const at::Tensor&,
                                                  const at::Tensor& bias) {
        at::Tensor y = memsweep::plugins::adapter::Nf4Linear(x, *q, compute);
        if (bias.defined()) y = y + bias.to(compute);
        return y.to(x.scalar_type());
      };
      layer->forward = fn;
      forwards_[layer] = fn;
    }
    return added;
  }

  LoraAdapter lora_;
  c10::ScalarType compute_, base_dtype_;
  std::vector<std::string> quantize_;
  bool double_quant_;
  std::vector<std::string> quantized_;
  std::map<const memsweep::model::LinearLayer*, memsweep::model::LinearFn> forwards_;
};

}  // namespace

MEMSWEEP_PLUGIN(Qlora, "qlora", "adapter", "1.0.0",
                "QLoRA: LoRA factors over a base stored in NF4 (bitsandbytes' format, double "
                "quantisation), its products in compute_dtype",
                kParams, /*slot_default=*/0)
