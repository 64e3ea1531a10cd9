#include "lora_adapter.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <cmath>
#include <stdexcept>

#include "lora_linear.h"

namespace memsweep::plugins::adapter {
namespace {

bool IsIn(const std::vector<at::Tensor>& tensors, const at::Tensor& t) {
  for (const at::Tensor& x : tensors) {
    if (x.is_same(t)) return true;
  }
  return false;
}

}  // namespace

c10::ScalarType DtypeParam(const std::string& key, const std::string& name) {
  if (name == "fp32") return at::kFloat;
  if (name == "bf16") return at::kBFloat16;
  if (name == "fp16") return at::kHalf;
  throw std::invalid_argument(key + " \"" + name + "\" is not one of fp32, bf16, fp16");
}

LoraAdapter::LoraAdapter(const PluginParams& params)
    : alpha_(params.Float("alpha")),
      dropout_(params.Float("dropout")),
      rslora_(params.Bool("use_rslora")) {
  settings_.rank = params.Int("rank");
  settings_.targets = params.Strings("target_modules");
  settings_.modules_to_save = params.Strings("modules_to_save");
  if (settings_.rank < 1) throw std::invalid_argument("rank must be at least 1");
  if (!(dropout_ >= 0.0 && dropout_ < 1.0)) throw std::invalid_argument("dropout must be in [0, 1)");
}

AdapterPlan LoraAdapter::Plan(const model::ModelShape& shape) const {
  AdapterPlan plan;
  plan.trainable_params =
      LoraTrainableParameters(shape, settings_, ResolveLoraModules(shape, settings_));
  plan.freezes_base = true;
  return plan;
}

std::vector<AdapterTensor> LoraAdapter::AdaptGroup(const std::vector<size_t>& built,
                                                   RunContext& ctx, const BaseStore& base) {
  if (!resolved_) {
    modules_ = ResolveLoraModules(ctx.model->Shape(), settings_);
    resolved_ = true;
  }
  const std::vector<at::Tensor> all = ctx.model->Parameters();
  std::vector<at::Tensor> group;
  for (size_t i : built) group.push_back(all[i]);
  std::vector<model::LinearLayer*> layers = ctx.model->Linears();
  int64_t block = -1;
  for (const model::LinearLayer* layer : layers) {
    if (layer->shape.block >= 0 && IsIn(group, layer->weight)) block = layer->shape.block;
  }
  Freeze(group, *ctx.model, base);
  std::vector<AdapterTensor> added;
  for (const LoraModule& m : modules_) {
    if (m.block != block) continue;
    auto [a, b] = Factors(m, ctx);
    for (size_t i : m.layers) {
      model::LinearLayer& layer = *layers[i];
      LoraFactors f;
      f.a = a;
      f.b = b;
      f.b_offset = layer.shape.module_offset;
      f.b_rows = layer.shape.out_features;
      f.scaling = Scaling();
      f.dropout = dropout_;
      layer.forward = LoraForward(std::move(f), base.forward(layer));
      layer.forward_tensors = {a, b};
    }
    added.push_back({m.module + "_lora_A", a});
    added.push_back({m.module + "_lora_B", b});
  }
  return added;
}

double LoraAdapter::Scaling() const {
  const double r = static_cast<double>(settings_.rank);
  return rslora_ ? alpha_ / std::sqrt(r) : alpha_ / r;
}

bool LoraAdapter::Saved(const std::string& module) const {
  for (const std::string& m : settings_.modules_to_save) {
    if (m == module) return true;
  }
  return false;
}

// Every parameter of the group stops training — but the modules to save — and is kept as the
// base store says.
void LoraAdapter::Freeze(const std::vector<at::Tensor>& group, model::Model& model,
                         const BaseStore& base) const {
  const at::Tensor embedding = model.Embedding();
  at::Tensor lm_head;
  for (model::LinearLayer* layer : model.Linears()) {
    if (layer->shape.name == "lm_head") lm_head = layer->weight;
  }
  at::NoGradGuard no_grad;
  for (const at::Tensor& p : group) {
    if ((Saved("embed_tokens") && p.is_same(embedding)) ||
        (Saved("lm_head") && lm_head.defined() && p.is_same(lm_head))) {
      continue;
    }
    at::Tensor param = p;
    param.requires_grad_(false);
    base.store(param);
  }
}

// A: Kaiming-uniform with a = √5 (PEFT's init: U(-1/√in, 1/√in)); B: zeros. Drawn on the CPU
// from the experiment's seed and the block (the same values on every device), in fp32.
// On the estimate's meta device the factors are their shapes: nothing is drawn (drawing a 7B
// model's factors on the CPU took most of an estimate's time), and they are allocated in the
// order and sizes of a run's.
std::pair<at::Tensor, at::Tensor> LoraAdapter::Factors(const LoraModule& m, RunContext& ctx) {
  if (ctx.device.is_meta()) {
    ++draws_;
    const at::TensorOptions meta = at::TensorOptions().device(c10::kMeta);
    at::Tensor a = at::empty({settings_.rank, m.in_features}, meta);
    at::Tensor b = at::empty({m.out_features, settings_.rank}, meta);
    return {a.requires_grad_(true), b.requires_grad_(true)};
  }
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(
      ctx.seed * 1000003ULL + static_cast<uint64_t>(m.block) * 131ULL + draws_++);
  const double bound = 1.0 / std::sqrt(static_cast<double>(m.in_features));
  at::Tensor a = at::empty({settings_.rank, m.in_features}).uniform_(-bound, bound, gen);
  at::Tensor b = at::zeros({m.out_features, settings_.rank});
  return {a.to(ctx.device).requires_grad_(true), b.to(ctx.device).requires_grad_(true)};
}

}  // namespace memsweep::plugins::adapter
