// LlamaConfig: the shape of a Llama-family decoder, with the key names of Hugging Face's configs,
// so that real models (Llama-3, Mistral, Qwen2/2.5, Phi-3/Phi-4-mini: hf_config.h reads their
// config.json) are trained with their own shapes, biases and rotary embeddings.
//
//   LlamaConfig cfg = LlamaPreset("small").value();
//   cfg.num_hidden_layers = 4;
//   if (auto problem = cfg.Problem()) { ... tell the user ... }
//   int64_t n = cfg.ParameterCount();
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memsweep::model {

// Scaling of the rotary frequencies (Hugging Face's rope_scaling).
struct RopeScaling {
  enum class Kind : uint8_t {
    kNone,
    kLlama3,    // Llama-3.1/3.2: low frequencies divided by `factor`, a smooth band between
    kLongRope,  // Phi-3/Phi-4 ("longrope", "su"): one factor per frequency, short or long list
  };
  Kind kind = Kind::kNone;
  double factor = 1.0;            // llama3
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  int64_t original_max_position_embeddings = 0;  // llama3, longrope (the pretraining length)
  std::vector<double> short_factor, long_factor;  // longrope: RotaryDim() / 2 each
  double attention_factor = 0.0;  // longrope: cos and sin scale; 0 = derived (docs/metrics.md)
};

struct LlamaConfig {
  // Hugging Face model_type: "llama", "mistral", "qwen2" or "phi3" (what the weights' tensor
  // names follow); the presets are "llama".
  std::string model_type = "llama";
  int64_t vocab_size = 512;
  int64_t hidden_size = 64;
  int64_t intermediate_size = 172;
  int64_t num_hidden_layers = 2;
  int64_t num_attention_heads = 4;
  int64_t num_key_value_heads = 2;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-5;
  bool tie_word_embeddings = false;
  int64_t max_position_embeddings = 1024;
  int64_t head_dim = 0;                // 0: hidden_size / num_attention_heads
  bool qkv_bias = false;               // biases on q, k, v (qwen2; llama's attention_bias)
  bool o_bias = false;                 // bias on o (llama's attention_bias)
  bool mlp_bias = false;               // biases on gate, up, down (llama's mlp_bias)
  double partial_rotary_factor = 1.0;  // fraction of each head rotated (phi3: 0.75)
  int64_t sliding_window = 0;          // keys further back are masked (0: none); see Problem
  RopeScaling rope_scaling;

  int64_t HeadDim() const { return head_dim > 0 ? head_dim : hidden_size / num_attention_heads; }
  int64_t QDim() const { return num_attention_heads * HeadDim(); }
  int64_t KvDim() const { return num_key_value_heads * HeadDim(); }
  // Leading dimensions of each head that rotary embeddings rotate (the rest pass through).
  int64_t RotaryDim() const {
    return static_cast<int64_t>(static_cast<double>(HeadDim()) * partial_rotary_factor);
  }

  // What is wrong with the shape and what to change, or nullopt when it is valid.
  std::optional<std::string> Problem() const;

  // Closed-form counts (no model needed).
  int64_t ParameterCount() const;        // every distinct parameter (tied weights once)
  int64_t MatmulParameterCount() const;  // parameters used as GEMM weights, incl. the LM head
  // Training FLOPs per token: 6·N + 12·L·H·Q·T (N = MatmulParameterCount, L layers, H heads,
  // Q head dim, T sequence length). See docs/metrics.md.
  double TrainingFlopsPerToken(int64_t seq_len) const;
};

// Named shapes: "tiny" (tests, quickstart: whole runs in seconds) and "small" (~30M params).
std::optional<LlamaConfig> LlamaPreset(const std::string& name);
std::vector<std::string> LlamaPresetNames();

}  // namespace memsweep::model
