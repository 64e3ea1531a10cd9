#include "core/model/llama_config.h"

#include <sstream>

namespace memsweep::model {

std::optional<std::string> LlamaConfig::Problem() const {
  std::ostringstream out;
  const std::pair<const char*, int64_t> positive[] = {
      {"vocab_size", vocab_size},
      {"hidden_size", hidden_size},
      {"intermediate_size", intermediate_size},
      {"num_hidden_layers", num_hidden_layers},
      {"num_attention_heads", num_attention_heads},
      {"num_key_value_heads", num_key_value_heads},
      {"max_position_embeddings", max_position_embeddings}};
  for (const auto& [name, value] : positive) {
    if (value <= 0) {
      out << name << " = " << value << " must be positive";
      return out.str();
    }
  }
  if (head_dim <= 0 && hidden_size % num_attention_heads != 0) {
    out << "hidden_size = " << hidden_size << " is not divisible by num_attention_heads = "
        << num_attention_heads << ": choose heads that divide the hidden size (or set head_dim)";
    return out.str();
  }
  if (num_attention_heads % num_key_value_heads != 0) {
    out << "num_attention_heads = " << num_attention_heads
        << " is not a multiple of num_key_value_heads = " << num_key_value_heads
        << ": grouped-query attention needs whole groups";
    return out.str();
  }
  if (partial_rotary_factor <= 0 || partial_rotary_factor > 1) {
    out << "partial_rotary_factor = " << partial_rotary_factor << " must be in (0, 1]";
    return out.str();
  }
  if (RotaryDim() % 2 != 0 || static_cast<double>(RotaryDim()) !=
                                  static_cast<double>(HeadDim()) * partial_rotary_factor) {
    out << "the rotary dimension head_dim × partial_rotary_factor = " << HeadDim() << " × "
        << partial_rotary_factor << " must be an even whole number";
    return out.str();
  }
  if (rope_scaling.kind == RopeScaling::Kind::kLongRope) {
    const size_t half = static_cast<size_t>(RotaryDim() / 2);
    if (rope_scaling.short_factor.size() != half || rope_scaling.long_factor.size() != half) {
      out << "rope_scaling (longrope) needs short_factor and long_factor of " << half
          << " values each (rotary dimension / 2), found " << rope_scaling.short_factor.size()
          << " and " << rope_scaling.long_factor.size();
      return out.str();
    }
  }
  if (rope_scaling.kind == RopeScaling::Kind::kLlama3 &&
      (rope_scaling.factor <= 0 || rope_scaling.original_max_position_embeddings <= 0 ||
       rope_scaling.high_freq_factor <= rope_scaling.low_freq_factor)) {
    return "rope_scaling (llama3) needs factor > 0, original_max_position_embeddings > 0 and "
           "high_freq_factor > low_freq_factor";
  }
  if (sliding_window < 0) return "sliding_window must not be negative (0: none)";
  if (rope_theta <= 0 || rms_norm_eps <= 0) return "rope_theta and rms_norm_eps must be positive";
  return std::nullopt;
}

int64_t LlamaConfig::ParameterCount() const {
  const int64_t h = hidden_size, q = QDim(), kv = KvDim(), inter = intermediate_size;
  int64_t per_layer = h * q + 2 * h * kv + q * h + 3 * h * inter + 2 * h;  // weights, norms
  if (qkv_bias) per_layer += q + 2 * kv;
  if (o_bias) per_layer += h;
  if (mlp_bias) per_layer += 2 * inter + h;
  const int64_t embedding = vocab_size * h;
  const int64_t head = tie_word_embeddings ? 0 : vocab_size * h;
  return embedding + num_hidden_layers * per_layer + h + head;
}

int64_t LlamaConfig::MatmulParameterCount() const {
  const int64_t h = hidden_size, q = QDim(), kv = KvDim();
  const int64_t per_layer = 2 * h * q + 2 * h * kv + 3 * h * intermediate_size;
  return num_hidden_layers * per_layer + vocab_size * h;  // the LM head is a GEMM, tied or not
}

double LlamaConfig::TrainingFlopsPerToken(int64_t seq_len) const {
  return 6.0 * static_cast<double>(MatmulParameterCount()) +
         12.0 * static_cast<double>(num_hidden_layers) * num_attention_heads * HeadDim() *
             static_cast<double>(seq_len);
}

std::optional<LlamaConfig> LlamaPreset(const std::string& name) {
  LlamaConfig cfg;
  if (name == "tiny") {
    return cfg;  // the defaults above: ~0.3M parameters, byte vocabulary
  }
  if (name == "small") {
    cfg.vocab_size = 8192;
    cfg.hidden_size = 512;
    cfg.intermediate_size = 1376;
    cfg.num_hidden_layers = 8;
    cfg.num_attention_heads = 8;
    cfg.num_key_value_heads = 8;
    cfg.max_position_embeddings = 4096;
    return cfg;
  }
  return std::nullopt;
}

std::vector<std::string> LlamaPresetNames() { return {"tiny", "small"}; }

}  // namespace memsweep::model
