#include "core/model/llama.h"

#include <ATen/ATen.h>

#include "memsweep/batch.h"
#include "core/model/rotary.h"

namespace memsweep::model {
namespace {

constexpr double kInitStd = 0.02;  // Hugging Face's initializer_range for Llama

at::Tensor NormalWeight(int64_t rows, int64_t cols) {
  return at::empty({rows, cols}).normal_(0.0, kInitStd);
}

}  // namespace

RmsNormImpl::RmsNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight_ = register_parameter("weight", at::ones({dim}));
}

at::Tensor RmsNormImpl::forward(const at::Tensor& x) {
  const at::Tensor x32 = x.to(at::kFloat);
  const at::Tensor normed = x32 * at::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return weight_ * normed.to(x.scalar_type());
}

DecoderBlockImpl::DecoderBlockImpl(const LlamaConfig& config) : config_(config) {
  const int64_t h = config.hidden_size, kv = config.KvDim(), inter = config.intermediate_size;
  input_norm_ = register_module("input_layernorm", RmsNorm(h, config.rms_norm_eps));
  q_proj_ = register_parameter("q_proj", NormalWeight(h, h));
  k_proj_ = register_parameter("k_proj", NormalWeight(kv, h));
  v_proj_ = register_parameter("v_proj", NormalWeight(kv, h));
  o_proj_ = register_parameter("o_proj", NormalWeight(h, h));
  post_attention_norm_ =
      register_module("post_attention_layernorm", RmsNorm(h, config.rms_norm_eps));
  gate_proj_ = register_parameter("gate_proj", NormalWeight(inter, h));
  up_proj_ = register_parameter("up_proj", NormalWeight(inter, h));
  down_proj_ = register_parameter("down_proj", NormalWeight(h, inter));
}

at::Tensor DecoderBlockImpl::Attention(const at::Tensor& x, const at::Tensor& cos,
                                       const at::Tensor& sin, const AttentionInputs& inputs,
                                       const AttentionFn& attention) {
  const int64_t b = x.size(0), t = x.size(1);
  const int64_t heads = config_.num_attention_heads, kv_heads = config_.num_key_value_heads;
  const int64_t d = config_.HeadDim();
  const at::Tensor q = at::linear(x, q_proj_).view({b, t, heads, d}).transpose(1, 2);
  const at::Tensor k = at::linear(x, k_proj_).view({b, t, kv_heads, d}).transpose(1, 2);
  const at::Tensor v = at::linear(x, v_proj_).view({b, t, kv_heads, d}).transpose(1, 2);
  const at::Tensor out = attention(ApplyRotary(q, cos, sin), ApplyRotary(k, cos, sin), v, inputs);
  return at::linear(out.transpose(1, 2).reshape({b, t, heads * d}), o_proj_);
}

at::Tensor DecoderBlockImpl::Mlp(const at::Tensor& x) {
  return at::linear(at::silu(at::linear(x, gate_proj_)) * at::linear(x, up_proj_), down_proj_);
}

at::Tensor DecoderBlockImpl::forward(const at::Tensor& x, const at::Tensor& cos,
                                     const at::Tensor& sin, const AttentionInputs& inputs,
                                     const AttentionFn& attention) {
  const at::Tensor h = x + Attention(input_norm_->forward(x), cos, sin, inputs, attention);
  return h + Mlp(post_attention_norm_->forward(h));
}

std::shared_ptr<Block> DecoderBlockImpl::Share() {
  try {
    return std::shared_ptr<Block>(shared_from_this(), this);
  } catch (const std::bad_weak_ptr&) {
    return {};
  }
}

Block::~Block() = default;
Model::~Model() = default;

at::Tensor RunBlockDirectly(Block& block, const at::Tensor& x, const at::Tensor& cos,
                            const at::Tensor& sin, const AttentionInputs& inputs,
                            const AttentionFn& attention) {
  return block.Forward(x, cos, sin, inputs, attention);
}

std::vector<Block*> LlamaModelImpl::Blocks() const {
  std::vector<Block*> blocks;
  blocks.reserve(blocks_.size());
  for (const DecoderBlock& block : blocks_) blocks.push_back(block.ptr().get());
  return blocks;
}

LlamaModelImpl::LlamaModelImpl(const LlamaConfig& config) : config_(config) {
  embed_tokens_ = register_parameter("embed_tokens", NormalWeight(config.vocab_size,
                                                                  config.hidden_size));
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    blocks_.push_back(register_module("layer" + std::to_string(i), DecoderBlock(config)));
  }
  final_norm_ = register_module("norm", RmsNorm(config.hidden_size, config.rms_norm_eps));
  lm_head_ = config.tie_word_embeddings
                 ? embed_tokens_
                 : register_parameter("lm_head", NormalWeight(config.vocab_size,
                                                              config.hidden_size));
}

at::Tensor LlamaModelImpl::forward(const at::Tensor& input_ids, const at::Tensor& position_ids,
                                   const at::Tensor& segment_ids) {
  TORCH_CHECK(attention_, "LlamaModel: no attention function set (the attention slot sets it)");
  at::Tensor x = at::embedding(embed_tokens_, input_ids);
  auto [cos, sin] = RotaryTables(position_ids, config_.HeadDim(), config_.rope_theta,
                                 x.scalar_type());
  const AttentionInputs inputs{position_ids, segment_ids};
  for (auto& block : blocks_) x = block_runner_(*block, x, cos, sin, inputs, attention_);
  return at::linear(final_norm_->forward(x), lm_head_);
}

std::pair<at::Tensor, at::Tensor> RotaryTables(const at::Tensor& position_ids, int64_t head_dim,
                                               double theta, c10::ScalarType dtype) {
  const at::Tensor exponents = at::arange(0, head_dim, 2, position_ids.options().dtype(at::kFloat)) / static_cast<double>(head_dim);
  const at::Tensor inv_freq = at::pow(theta, exponents).reciprocal();            // [D/2]
  const at::Tensor freqs = position_ids.to(at::kFloat).unsqueeze(-1) * inv_freq;  // [B, T, D/2]
  const at::Tensor angles = at::cat({freqs, freqs}, -1).unsqueeze(1);             // [B, 1, T, D]
  return {angles.cos().to(dtype), angles.sin().to(dtype)};
}

at::Tensor NextTokenLoss(const at::Tensor& logits, const at::Tensor& targets, double normalizer) {
  const int64_t vocab = logits.size(-1);
  const at::Tensor summed =
      at::cross_entropy_loss(logits.reshape({-1, vocab}).to(at::kFloat), targets.reshape({-1}),
                             /*weight=*/{}, at::Reduction::Sum, data::kIgnoreIndex);
  return summed / normalizer;
}

}  // namespace memsweep::model
