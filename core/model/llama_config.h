// LlamaConfig: the shape of a Llama-family decoder, with the key names of Hugging Face's
// LlamaConfig so that real model shapes (Qwen2.5, LLaMA-3.2, Phi-4-mini ...) can be written down.
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

struct LlamaConfig {
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

  int64_t HeadDim() const { return hidden_size / num_attention_heads; }
  int64_t KvDim() const { return num_key_value_heads * HeadDim(); }

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
