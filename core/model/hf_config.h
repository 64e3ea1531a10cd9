// Reads a Hugging Face model's config.json into a LlamaConfig: the architectures memsweep trains
// (model_type llama, mistral, qwen2, phi3) with their shapes, biases, rotary embeddings and
// sliding window. Nothing is allocated: ParameterCount() and the shapes come from the config.
//
//   LlamaConfig cfg = ReadHuggingFaceConfig("experiments/models/Qwen2.5-0.5B");  // dir or file
//   cfg.ParameterCount();  // 494,032,768
//
// What each model_type implies (the keys a config.json may leave out take Hugging Face's
// defaults for that type):
//   llama    attention_bias (q, k, v, o biases), mlp_bias, head_dim, rope_scaling "llama3"
//   mistral  sliding_window (memsweep refuses runs longer than the window: docs/models.md)
//   qwen2    q, k, v biases, no o bias; sliding window only with use_sliding_window = true
//   phi3     fused qkv_proj and gate_up_proj weights (split when loaded: same parameters),
//            partial_rotary_factor, rope_scaling "longrope"/"su" (short and long factors)
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "core/model/llama_config.h"

namespace memsweep::model {

// A config.json that cannot be read or describes something memsweep cannot train. The message
// names the file and what to do.
class ModelConfigError : public std::runtime_error {
 public:
  explicit ModelConfigError(const std::string& message) : std::runtime_error(message) {}
};

const std::vector<std::string>& SupportedModelTypes();  // llama, mistral, qwen2, phi3

// `path`: a config.json or the directory holding one. Throws ModelConfigError.
LlamaConfig ReadHuggingFaceConfig(const std::string& path);

}  // namespace memsweep::model
