#include "core/model/linear_shapes.h"

namespace memsweep::model {

ModelShape ShapeOf(const LlamaConfig& c) {
  ModelShape shape;
  shape.model_type = c.model_type;
  shape.parameters = c.ParameterCount();
  shape.vocab_size = c.vocab_size;
  shape.hidden_size = c.hidden_size;
  shape.tied_embeddings = c.tie_word_embeddings;
  const bool fused = c.model_type == "phi3";
  const int64_t h = c.hidden_size, q = c.QDim(), kv = c.KvDim(), inter = c.intermediate_size;
  for (int64_t b = 0; b < c.num_hidden_layers; ++b) {
    const auto add = [&](const char* name, int64_t in, int64_t out, bool bias, const char* module,
                         int64_t offset, int64_t module_out) {
      shape.linears.push_back({name, b, in, out, bias, fused && module != nullptr ? module : name,
                               fused && module != nullptr ? offset : 0,
                               fused && module != nullptr ? module_out : out});
    };
    add("q_proj", h, q, c.qkv_bias, "qkv_proj", 0, q + 2 * kv);
    add("k_proj", h, kv, c.qkv_bias, "qkv_proj", q, q + 2 * kv);
    add("v_proj", h, kv, c.qkv_bias, "qkv_proj", q + kv, q + 2 * kv);
    add("o_proj", q, h, c.o_bias, nullptr, 0, 0);
    add("gate_proj", h, inter, c.mlp_bias, "gate_up_proj", 0, 2 * inter);
    add("up_proj", h, inter, c.mlp_bias, "gate_up_proj", inter, 2 * inter);
    add("down_proj", inter, h, c.mlp_bias, nullptr, 0, 0);
  }
  shape.linears.push_back({"lm_head", -1, h, c.vocab_size, false, "lm_head", 0, c.vocab_size});
  return shape;
}

}  // namespace memsweep::model
