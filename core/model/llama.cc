#include "core/model/llama.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <cmath>

#include "memsweep/batch.h"
#include "memsweep/loss.h"
#include "core/model/linear_shapes.h"
#include "core/model/rotary.h"

namespace memsweep::model {
namespace {

constexpr double kInitStd = 0.02;  // Hugging Face's initializer_range for Llama

// How a parameter starts: weight matrices N(0, kInitStd), norm weights ones, biases zeros.
enum class Init { kNormal, kOnes, kZeros };

thread_local c10::DeviceType g_parameter_device = c10::DeviceType::CPU;

at::Tensor Initialised(at::IntArrayRef sizes, Init init) {
  const at::TensorOptions options = at::TensorOptions().device(g_parameter_device);
  switch (init) {
    case Init::kNormal:
      return at::empty(sizes, options).normal_(0.0, kInitStd);
    case Init::kOnes:
      return at::ones(sizes, options);
    case Init::kZeros:
      return at::zeros(sizes, options);
  }
  return {};
}

// A new parameter: initialised now, or (deferred) its shape and dtype over a storage of 0 bytes.
at::Tensor NewParameter(at::IntArrayRef sizes, Init init, Construction construction) {
  if (construction == Construction::kNow) return Initialised(sizes, init);
  at::Tensor shell = at::empty({0}, at::TensorOptions().device(g_parameter_device));
  shell.unsafeGetTensorImpl()->set_sizes_contiguous(sizes);
  return shell;
}

// Gives a deferred parameter its memory and initial values (the same Variable: modules and
// optimizers holding it see the values).
void BuildParameter(at::Tensor& parameter, Init init) {
  if (!parameter.defined()) return;
  torch::NoGradGuard no_grad;
  parameter.set_data(Initialised(parameter.sizes(), init));
}

}  // namespace

ScopedParameterDevice::ScopedParameterDevice(c10::DeviceType device)
    : previous_(g_parameter_device) {
  g_parameter_device = device;
}
ScopedParameterDevice::~ScopedParameterDevice() { g_parameter_device = previous_; }

RmsNormImpl::RmsNormImpl(int64_t dim, double eps, Construction construction) : eps_(eps) {
  weight_ = register_parameter("weight", NewParameter({dim}, Init::kOnes, construction));
}

void RmsNormImpl::Build() { BuildParameter(weight_, Init::kOnes); }

at::Tensor RmsNormImpl::forward(const at::Tensor& x) {
  if (kernel_) return kernel_(x, weight_, eps_);
  const at::Tensor x32 = x.to(at::kFloat);
  const at::Tensor normed = x32 * at::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return weight_ * normed.to(x.scalar_type());
}

DecoderBlockImpl::DecoderBlockImpl(const LlamaConfig& config, Construction construction)
    : config_(config) {
  const int64_t h = config.hidden_size, q = config.QDim(), kv = config.KvDim();
  const int64_t inter = config.intermediate_size;
  const auto weight = [&](int64_t rows, int64_t cols) {
    return NewParameter({rows, cols}, Init::kNormal, construction);
  };
  const auto bias = [&](int64_t n) { return NewParameter({n}, Init::kZeros, construction); };
  input_norm_ = register_module("input_layernorm", RmsNorm(h, config.rms_norm_eps, construction));
  q_proj_ = register_parameter("q_proj", weight(q, h));
  k_proj_ = register_parameter("k_proj", weight(kv, h));
  v_proj_ = register_parameter("v_proj", weight(kv, h));
  o_proj_ = register_parameter("o_proj", weight(h, q));
  post_attention_norm_ =
      register_module("post_attention_layernorm", RmsNorm(h, config.rms_norm_eps, construction));
  gate_proj_ = register_parameter("gate_proj", weight(inter, h));
  up_proj_ = register_parameter("up_proj", weight(inter, h));
  down_proj_ = register_parameter("down_proj", weight(h, inter));
  // Biases start at zero (Hugging Face's initialisation), after the weights: the presets, which
  // have none, draw the same random weights as before.
  if (config.qkv_bias) {
    q_bias_ = register_parameter("q_proj_bias", bias(q));
    k_bias_ = register_parameter("k_proj_bias", bias(kv));
    v_bias_ = register_parameter("v_proj_bias", bias(kv));
  }
  if (config.o_bias) o_bias_ = register_parameter("o_proj_bias", bias(h));
  if (config.mlp_bias) {
    gate_bias_ = register_parameter("gate_proj_bias", bias(inter));
    up_bias_ = register_parameter("up_proj_bias", bias(inter));
    down_bias_ = register_parameter("down_proj_bias", bias(h));
  }
}

void DecoderBlockImpl::SetLinearShapes(const LinearShape* shapes) {
  const std::array<std::pair<at::Tensor, at::Tensor>, 7> params = {{{q_proj_, q_bias_},
                                                                    {k_proj_, k_bias_},
                                                                    {v_proj_, v_bias_},
                                                                    {o_proj_, o_bias_},
                                                                    {gate_proj_, gate_bias_},
                                                                    {up_proj_, up_bias_},
                                                                    {down_proj_, down_bias_}}};
  for (size_t i = 0; i < linears_.size(); ++i) {
    linears_[i].shape = shapes[i];
    linears_[i].weight = params[i].first;
    linears_[i].bias = params[i].second;
  }
}

void DecoderBlockImpl::AddTensors(const std::vector<AdapterTensor>& tensors) {
  for (const AdapterTensor& t : tensors) {
    register_parameter(t.name, t.tensor, t.tensor.requires_grad());
  }
}

at::Tensor DecoderBlockImpl::Apply(size_t layer, const at::Tensor& x) const {
  const LinearLayer& l = linears_[layer];
  return l.forward ? l.forward(x, l.weight, l.bias) : at::linear(x, l.weight, l.bias);
}

void DecoderBlockImpl::Build() {  // the constructor's order: the same random draws
  input_norm_->Build();
  for (at::Tensor* w : {&q_proj_, &k_proj_, &v_proj_, &o_proj_}) BuildParameter(*w, Init::kNormal);
  post_attention_norm_->Build();
  for (at::Tensor* w : {&gate_proj_, &up_proj_, &down_proj_}) BuildParameter(*w, Init::kNormal);
  for (at::Tensor* b :
       {&q_bias_, &k_bias_, &v_bias_, &o_bias_, &gate_bias_, &up_bias_, &down_bias_}) {
    BuildParameter(*b, Init::kZeros);
  }
}

namespace {

// Rotary embedding of the leading cos.size(-1) dimensions of each head; the rest pass through
// (partial_rotary_factor < 1).
at::Tensor RotateLeading(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t rotary = cos.size(-1), d = x.size(-1);
  if (rotary == d) return ApplyRotary(x, cos, sin);
  return at::cat({ApplyRotary(x.narrow(-1, 0, rotary), cos, sin), x.narrow(-1, rotary, d - rotary)},
                 -1);
}

}  // namespace

at::Tensor DecoderBlockImpl::Attention(const at::Tensor& x, const at::Tensor& cos,
                                       const at::Tensor& sin, const AttentionInputs& inputs,
                                       const AttentionFn& attention) {
  const int64_t b = x.size(0), t = x.size(1);
  const int64_t heads = config_.num_attention_heads, kv_heads = config_.num_key_value_heads;
  const int64_t d = config_.HeadDim();
  const at::Tensor q = Apply(0, x).view({b, t, heads, d}).transpose(1, 2);
  const at::Tensor k = Apply(1, x).view({b, t, kv_heads, d}).transpose(1, 2);
  const at::Tensor v = Apply(2, x).view({b, t, kv_heads, d}).transpose(1, 2);
  const at::Tensor out =
      attention(RotateLeading(q, cos, sin), RotateLeading(k, cos, sin), v, inputs);
  return Apply(3, out.transpose(1, 2).reshape({b, t, heads * d}));
}

at::Tensor DecoderBlockImpl::Mlp(const at::Tensor& x) {
  if (swiglu_) {
    const at::Tensor gate = Apply(4, x);  // in this order, as below
    return Apply(6, swiglu_(gate, Apply(5, x)));
  }
  return Apply(6, at::silu(Apply(4, x)) * Apply(5, x));
}

void DecoderBlockImpl::SetKernels(const Kernels& kernels) {
  input_norm_->SetKernel(kernels.rms_norm);
  post_attention_norm_->SetKernel(kernels.rms_norm);
  swiglu_ = kernels.swiglu;
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

std::vector<LinearLayer*> LlamaModelImpl::Linears() {
  std::vector<LinearLayer*> layers;
  for (DecoderBlock& block : blocks_) {
    for (LinearLayer& l : block->linears()) layers.push_back(&l);
  }
  layers.push_back(&lm_head_layer_);
  return layers;
}

void LlamaModelImpl::SetKernels(const Kernels& kernels) {
  for (DecoderBlock& block : blocks_) block->SetKernels(kernels);
  final_norm_->SetKernel(kernels.rms_norm);
}

void LlamaModelImpl::AddGroupTensors(size_t group, const std::vector<AdapterTensor>& tensors) {
  if (group >= 1 && group <= blocks_.size()) {
    blocks_[group - 1]->AddTensors(tensors);
    return;
  }
  for (const AdapterTensor& t : tensors) {
    register_parameter(t.name, t.tensor, t.tensor.requires_grad());
  }
}

LlamaModelImpl::LlamaModelImpl(const LlamaConfig& config, Construction construction)
    : config_(config), shape_(ShapeOf(config)) {
  const auto weight = [&](int64_t rows, int64_t cols) {
    return NewParameter({rows, cols}, Init::kNormal, construction);
  };
  embed_tokens_ = register_parameter("embed_tokens", weight(config.vocab_size, config.hidden_size));
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    blocks_.push_back(
        register_module("layer" + std::to_string(i), DecoderBlock(config, construction)));
  }
  final_norm_ =
      register_module("norm", RmsNorm(config.hidden_size, config.rms_norm_eps, construction));
  lm_head_ = config.tie_word_embeddings
                 ? embed_tokens_
                 : register_parameter("lm_head", weight(config.vocab_size, config.hidden_size));
  for (size_t b = 0; b < blocks_.size(); ++b) blocks_[b]->SetLinearShapes(&shape_.linears[7 * b]);
  lm_head_layer_ = {shape_.linears.back(), lm_head_, {}, {}};
  // Built now: nothing left for BuildGroup.
  if (construction == Construction::kNow) next_group_ = BuildGroupCount();
}

std::vector<at::Tensor> LlamaModelImpl::BuildGroup(size_t group) {
  TORCH_CHECK(group == next_group_ && group < BuildGroupCount(), "LlamaModel::BuildGroup(", group,
              "): groups are built once each, in order (next: ", next_group_, ")");
  ++next_group_;
  if (group == 0) {
    BuildParameter(embed_tokens_, Init::kNormal);
    return {embed_tokens_};
  }
  if (group <= blocks_.size()) {
    blocks_[group - 1]->Build();
    return blocks_[group - 1]->Parameters();
  }
  std::vector<at::Tensor> rest = final_norm_->parameters();
  final_norm_->Build();
  if (!config_.tie_word_embeddings) {
    BuildParameter(lm_head_, Init::kNormal);
    rest.push_back(lm_head_);
  }
  return rest;
}

at::Tensor LlamaModelImpl::HiddenStates(const at::Tensor& input_ids,
                                        const at::Tensor& position_ids,
                                        const at::Tensor& segment_ids) {
  TORCH_CHECK(attention_, "LlamaModel: no attention function set (the attention slot sets it)");
  at::Tensor x = at::embedding(embed_tokens_, input_ids);
  auto [cos, sin] = RotaryTables(position_ids, config_, x.scalar_type());
  const AttentionInputs inputs{position_ids, segment_ids};
  for (auto& block : blocks_) x = block_runner_(*block, x, cos, sin, inputs, attention_);
  return final_norm_->forward(x);
}

at::Tensor LlamaModelImpl::forward(const at::Tensor& input_ids, const at::Tensor& position_ids,
                                   const at::Tensor& segment_ids) {
  return ApplyLinear(lm_head_layer_, HiddenStates(input_ids, position_ids, segment_ids));
}

namespace {

// Llama-3's frequency scaling (rope_scaling type "llama3"), as Hugging Face computes it in fp32:
// wavelengths longer than original / low_freq_factor are divided by `factor`, shorter than
// original / high_freq_factor kept, and the band between interpolated smoothly.
at::Tensor Llama3Frequencies(const at::Tensor& inv_freq, const RopeScaling& s) {
  const double old_context = static_cast<double>(s.original_max_position_embeddings);
  const double low_wavelen = old_context / s.low_freq_factor;
  const double high_wavelen = old_context / s.high_freq_factor;
  const at::Tensor wavelen = 2 * M_PI / inv_freq;
  at::Tensor scaled = at::where(wavelen > low_wavelen, inv_freq / s.factor, inv_freq);
  const at::Tensor smooth = (old_context / wavelen - s.low_freq_factor) /
                            (s.high_freq_factor - s.low_freq_factor);
  const at::Tensor smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
  const at::Tensor medium = (wavelen >= high_wavelen).logical_and(wavelen <= low_wavelen);
  return at::where(medium, smoothed, scaled);
}

// LongRoPE's factor on cos and sin: the config's attention_factor, else
// sqrt(1 + ln(s) / ln(original)) with s = max_position_embeddings / original (1 when s <= 1).
double LongRopeAttentionFactor(const LlamaConfig& c) {
  const RopeScaling& s = c.rope_scaling;
  if (s.attention_factor > 0) return s.attention_factor;
  const double original = static_cast<double>(s.original_max_position_embeddings);
  const double factor = static_cast<double>(c.max_position_embeddings) / original;
  return factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(original));
}

}  // namespace

std::pair<at::Tensor, at::Tensor> RotaryTables(const at::Tensor& position_ids,
                                               const LlamaConfig& config, c10::ScalarType dtype) {
  const int64_t dim = config.RotaryDim();
  const at::Tensor exponents =
      at::arange(0, dim, 2, position_ids.options().dtype(at::kFloat)) / static_cast<double>(dim);
  at::Tensor inv_freq = at::pow(config.rope_theta, exponents).reciprocal();  // [D/2]
  double scale = 1.0;
  const RopeScaling& s = config.rope_scaling;
  if (s.kind == RopeScaling::Kind::kLlama3) inv_freq = Llama3Frequencies(inv_freq, s);
  if (s.kind == RopeScaling::Kind::kLongRope) {
    // The long factors once the positions go past the pretraining length, as Hugging Face does.
    // (An estimate's positions have no values: the tables' sizes are the same either way.)
    const bool long_context =
        position_ids.numel() > 0 && !position_ids.is_meta() &&
        position_ids.max().item<int64_t>() + 1 > s.original_max_position_embeddings;
    const std::vector<double>& factors = long_context ? s.long_factor : s.short_factor;
    const at::Tensor ext = at::tensor(factors, position_ids.options().dtype(at::kDouble))
                               .to(at::kFloat);
    inv_freq = (ext * at::pow(config.rope_theta, exponents)).reciprocal();
    scale = LongRopeAttentionFactor(config);
  }
  const at::Tensor freqs = position_ids.to(at::kFloat).unsqueeze(-1) * inv_freq;  // [B, T, D/2]
  const at::Tensor angles = at::cat({freqs, freqs}, -1).unsqueeze(1);             // [B, 1, T, D]
  if (scale == 1.0) return {angles.cos().to(dtype), angles.sin().to(dtype)};
  return {(angles.cos() * scale).to(dtype), (angles.sin() * scale).to(dtype)};
}

at::Tensor NextTokenLoss(const at::Tensor& logits, const at::Tensor& targets, double normalizer) {
  const int64_t vocab = logits.size(-1);
  const at::Tensor summed =
      at::cross_entropy_loss(logits.reshape({-1, vocab}).to(at::kFloat), targets.reshape({-1}),
                             /*weight=*/{}, at::Reduction::Sum, data::kIgnoreIndex);
  return summed / normalizer;
}

}  // namespace memsweep::model
