#include "core/model/hf_weights.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/utils.h>

#include <map>
#include <set>
#include <utility>

namespace memsweep::model {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// One Hugging Face tensor: its shape and the memsweep parameters it fills.
struct TensorLayout {
  std::vector<int64_t> shape;
  std::vector<ParameterSlice> slices;
};

// Every tensor of a checkpoint of `c`, the one enumeration both the check and the load use.
std::map<std::string, TensorLayout> TensorLayouts(const LlamaConfig& c) {
  const int64_t h = c.hidden_size, q = c.QDim(), kv = c.KvDim(), inter = c.intermediate_size;
  std::map<std::string, TensorLayout> out;
  out["model.embed_tokens.weight"] = {{c.vocab_size, h}, {{"embed_tokens"}}};
  out["model.norm.weight"] = {{h}, {{"norm.weight"}}};
  if (!c.tie_word_embeddings) out["lm_head.weight"] = {{c.vocab_size, h}, {{"lm_head"}}};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string hf = "model.layers." + std::to_string(i) + ".";
    const std::string ms = "layer" + std::to_string(i) + ".";
    const auto whole = [&](const std::string& name, std::vector<int64_t> shape,
                           const std::string& parameter) {
      out[hf + name] = {std::move(shape), {{ms + parameter}}};
    };
    whole("input_layernorm.weight", {h}, "input_layernorm.weight");
    whole("post_attention_layernorm.weight", {h}, "post_attention_layernorm.weight");
    whole("self_attn.o_proj.weight", {h, q}, "o_proj");
    whole("mlp.down_proj.weight", {h, inter}, "down_proj");
    if (c.model_type == "phi3") {  // fused: rows [q | k | v] and [gate | up]
      out[hf + "self_attn.qkv_proj.weight"] = {
          {q + 2 * kv, h},
          {{ms + "q_proj", 0, q}, {ms + "k_proj", q, kv}, {ms + "v_proj", q + kv, kv}}};
      out[hf + "mlp.gate_up_proj.weight"] = {
          {2 * inter, h}, {{ms + "gate_proj", 0, inter}, {ms + "up_proj", inter, inter}}};
    } else {
      whole("self_attn.q_proj.weight", {q, h}, "q_proj");
      whole("self_attn.k_proj.weight", {kv, h}, "k_proj");
      whole("self_attn.v_proj.weight", {kv, h}, "v_proj");
      whole("mlp.gate_proj.weight", {inter, h}, "gate_proj");
      whole("mlp.up_proj.weight", {inter, h}, "up_proj");
    }
    if (c.qkv_bias) {
      whole("self_attn.q_proj.bias", {q}, "q_proj_bias");
      whole("self_attn.k_proj.bias", {kv}, "k_proj_bias");
      whole("self_attn.v_proj.bias", {kv}, "v_proj_bias");
    }
    if (c.o_bias) whole("self_attn.o_proj.bias", {h}, "o_proj_bias");
    if (c.mlp_bias) {
      whole("mlp.gate_proj.bias", {inter}, "gate_proj_bias");
      whole("mlp.up_proj.bias", {inter}, "up_proj_bias");
      whole("mlp.down_proj.bias", {h}, "down_proj_bias");
    }
  }
  return out;
}

}  // namespace

std::map<std::string, std::vector<ParameterSlice>> HuggingFaceParameters(const LlamaConfig& c) {
  std::map<std::string, std::vector<ParameterSlice>> out;
  for (auto& [name, layout] : TensorLayouts(c)) out[name] = std::move(layout.slices);
  return out;
}

std::vector<ExpectedTensor> HuggingFaceTensors(const LlamaConfig& c) {
  std::vector<ExpectedTensor> out;
  for (auto& [name, layout] : TensorLayouts(c)) out.push_back({name, std::move(layout.shape)});
  return out;
}

void CheckWeights(const SafetensorsSet& set, const LlamaConfig& config) {
  std::string files;
  for (const auto& f : set.Files()) files += (files.empty() ? "" : ", ") + f;
  std::set<std::string> expected_names;
  for (const ExpectedTensor& expected : HuggingFaceTensors(config)) {
    expected_names.insert(expected.name);
    const TensorEntry* found = set.Find(expected.name);
    if (found == nullptr) {
      throw SafetensorsError(files + ": tensor \"" + expected.name + "\" (shape " +
                             ShapeText(expected.shape) + ") is missing: the weights are not a " +
                             config.model_type + " checkpoint of this shape (check [model] "
                             "config and the overrides beside it)");
    }
    if (!c10::isFloatingType(found->dtype)) {
      throw SafetensorsError(found->file + ": tensor \"" + expected.name + "\" holds " +
                             SafetensorsDtypeName(found->dtype) + " values; weights must be "
                             "F32, BF16 or F16");
    }
    if (found->shape != expected.shape) {
      throw SafetensorsError(found->file + ": tensor \"" + expected.name + "\" has shape " +
                             ShapeText(found->shape) + ", the model needs " +
                             ShapeText(expected.shape) + " (check [model] config and overrides)");
    }
  }
  for (const auto& [name, entry] : set.Entries()) {
    if (expected_names.count(name) != 0) continue;
    if (name == "lm_head.weight" && config.tie_word_embeddings) continue;  // tied: the embedding
    throw SafetensorsError(entry.file + ": tensor \"" + name + "\" (shape " +
                           ShapeText(entry.shape) + ") is not part of the " + config.model_type +
                           " model the config describes: the weights belong to another model or "
                           "shape");
  }
}

void LoadWeights(LlamaModelImpl& model, const SafetensorsSet& set,
                 const std::vector<at::Tensor>* only) {
  torch::NoGradGuard no_grad;
  const auto parameters = model.named_parameters();
  const auto wanted = [&](const std::vector<ParameterSlice>& destinations) {
    if (only == nullptr) return true;
    for (const ParameterSlice& d : destinations) {
      for (const at::Tensor& p : *only) {
        if (p.is_same(parameters[d.parameter])) return true;
      }
    }
    return false;
  };
  for (const auto& [hf_name, destinations] : HuggingFaceParameters(model.config())) {
    if (!wanted(destinations)) continue;
    const TensorEntry* entry = set.Find(hf_name);
    TORCH_CHECK(entry != nullptr, "LoadWeights: ", hf_name, " missing (call CheckWeights first)");
    const at::Tensor source = set.Read(*entry);
    for (const ParameterSlice& d : destinations) {
      at::Tensor target = parameters[d.parameter];
      target.copy_(d.rows < 0 ? source : source.narrow(0, d.row, d.rows));
    }
  }
}

}  // namespace memsweep::model
