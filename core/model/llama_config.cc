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
  if (hidden_size % num_attention_heads != 0) {
    out << "hidden_size = " << hidden_size << " is not divisible by num_attention_heads = "
        << num_attention_heads << ": choose heads that divide the hidden size";
    return out.str();
  }
  if (num_attention_heads % num_key_value_heads != 0) {
    out << "num_attention_heads = " << num_attention_heads
        << " is not a multiple of num_key_value_heads = " << num_key_value_heads
        << ": grouped-query attention needs whole groups";
    return out.str();
  }
  if (HeadDim() % 2 != 0) {
    out << "head dimension hidden_size / num_attention_heads = " << HeadDim()
        << " must be even for rotary embeddings";
    return out.str();
  }
  if (rope_theta <= 0 || rms_norm_eps <= 0) return "rope_theta and rms_norm_eps must be positive";
  return std::nullopt;
}

int64_t LlamaConfig::ParameterCount() const {
  const int64_t h = hidden_size;
  const int64_t per_layer = 2 * h * h + 2 * h * KvDim() + 3 * h * intermediate_size + 2 * h;
  const int64_t embedding = vocab_size * h;
  const int64_t head = tie_word_embeddings ? 0 : vocab_size * h;
  return embedding + num_hidden_layers * per_layer + h + head;
}

int64_t LlamaConfig::MatmulParameterCount() const {
  const int64_t h = hidden_size;
  const int64_t per_layer = 2 * h * h + 2 * h * KvDim() + 3 * h * intermediate_size;
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
