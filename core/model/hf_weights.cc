#include "core/model/hf_weights.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <map>
#include <set>

namespace memsweep::model {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

}  // namespace

std::map<std::string, std::vector<ParameterSlice>> HuggingFaceParameters(const LlamaConfig& c) {
  std::map<std::string, std::vector<ParameterSlice>> out;
  out["model.embed_tokens.weight"] = {{"embed_tokens"}};
  out["model.norm.weight"] = {{"norm.weight"}};
  if (!c.tie_word_embeddings) out["lm_head.weight"] = {{"lm_head"}};
  const int64_t q = c.QDim(), kv = c.KvDim(), inter = c.intermediate_size;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string hf = "model.layers." + std::to_string(i) + ".";
    const std::string ms = "layer" + std::to_string(i) + ".";
    out[hf + "input_layernorm.weight"] = {{ms + "input_layernorm.weight"}};
    out[hf + "post_attention_layernorm.weight"] = {{ms + "post_attention_layernorm.weight"}};
    out[hf + "self_attn.o_proj.weight"] = {{ms + "o_proj"}};
    out[hf + "mlp.down_proj.weight"] = {{ms + "down_proj"}};
    if (c.model_type == "phi3") {
      out[hf + "self_attn.qkv_proj.weight"] = {
          {ms + "q_proj", 0, q}, {ms + "k_proj", q, kv}, {ms + "v_proj", q + kv, kv}};
      out[hf + "mlp.gate_up_proj.weight"] = {{ms + "gate_proj", 0, inter},
                                             {ms + "up_proj", inter, inter}};
    } else {
      for (const char* p : {"q", "k", "v"}) {
        out[hf + "self_attn." + p + "_proj.weight"] = {{ms + p + "_proj"}};
      }
      for (const char* p : {"gate", "up"}) out[hf + "mlp." + p + "_proj.weight"] = {{ms + p + "_proj"}};
    }
    if (c.qkv_bias) {
      for (const char* p : {"q", "k", "v"}) {
        out[hf + "self_attn." + p + "_proj.bias"] = {{ms + p + "_proj_bias"}};
      }
    }
    if (c.o_bias) out[hf + "self_attn.o_proj.bias"] = {{ms + "o_proj_bias"}};
    if (c.mlp_bias) {
      for (const char* p : {"gate", "up", "down"}) {
        out[hf + "mlp." + p + "_proj.bias"] = {{ms + p + "_proj_bias"}};
      }
    }
  }
  return out;
}

std::vector<ExpectedTensor> HuggingFaceTensors(const LlamaConfig& c) {
  const int64_t h = c.hidden_size, q = c.QDim(), kv = c.KvDim(), inter = c.intermediate_size;
  std::map<std::string, std::vector<int64_t>> shapes;
  shapes["model.embed_tokens.weight"] = {c.vocab_size, h};
  shapes["model.norm.weight"] = {h};
  if (!c.tie_word_embeddings) shapes["lm_head.weight"] = {c.vocab_size, h};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string hf = "model.layers." + std::to_string(i) + ".";
    shapes[hf + "input_layernorm.weight"] = {h};
    shapes[hf + "post_attention_layernorm.weight"] = {h};
    shapes[hf + "self_attn.o_proj.weight"] = {h, q};
    shapes[hf + "mlp.down_proj.weight"] = {h, inter};
    if (c.model_type == "phi3") {
      shapes[hf + "self_attn.qkv_proj.weight"] = {q + 2 * kv, h};
      shapes[hf + "mlp.gate_up_proj.weight"] = {2 * inter, h};
    } else {
      shapes[hf + "self_attn.q_proj.weight"] = {q, h};
      shapes[hf + "self_attn.k_proj.weight"] = {kv, h};
      shapes[hf + "self_attn.v_proj.weight"] = {kv, h};
      shapes[hf + "mlp.gate_proj.weight"] = {inter, h};
      shapes[hf + "mlp.up_proj.weight"] = {inter, h};
    }
    if (c.qkv_bias) {
      shapes[hf + "self_attn.q_proj.bias"] = {q};
      shapes[hf + "self_attn.k_proj.bias"] = {kv};
      shapes[hf + "self_attn.v_proj.bias"] = {kv};
    }
    if (c.o_bias) shapes[hf + "self_attn.o_proj.bias"] = {h};
    if (c.mlp_bias) {
      shapes[hf + "mlp.gate_proj.bias"] = {inter};
      shapes[hf + "mlp.up_proj.bias"] = {inter};
      shapes[hf + "mlp.down_proj.bias"] = {h};
    }
  }
  std::vector<ExpectedTensor> out;
  for (auto& [name, shape] : shapes) out.push_back({name, shape});
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

void LoadWeights(LlamaModelImpl& model, const SafetensorsSet& set) {
  torch::NoGradGuard no_grad;
  const auto parameters = model.named_parameters();
  for (const auto& [hf_name, destinations] : HuggingFaceParameters(model.config())) {
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
