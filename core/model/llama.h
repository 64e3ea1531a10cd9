// LlamaModel: a Llama-family decoder in LibTorch, the model every memsweep run trains.
//
// token embedding → N × (RMSNorm → causal grouped-query attention with RoPE → residual →
// RMSNorm → SwiGLU MLP → residual) → final RMSNorm → LM head (optionally tied to the embedding).
// It holds only parameters (no buffers): rotary tables are computed from position ids on each
// forward, so that every byte the model keeps is a parameter in the memory breakdown.
//
// How attention and each decoder block are run comes from outside (the attention and
// checkpointing slots' plugins): SetAttention must be called before forward.
//
//   torch::manual_seed(seed);
//   LlamaModel model(LlamaPreset("tiny").value());
//   model->SetAttention(attention);
//   at::Tensor logits = model->forward(batch.input_ids, batch.position_ids);
//   at::Tensor loss = NextTokenLoss(logits, batch.targets, /*normalizer=*/batch.real_tokens);
//
// Built group by group (the trainer's model stage): LlamaModel(config, kDeferred) holds every
// parameter with its shape and dtype but no memory (a storage of 0 bytes); BuildGroup(g) for
// g = 0 .. BuildGroupCount() - 1 — the embedding, each decoder block, the final norm and LM head
// — initialises that group's parameters. Drawn in the same order from the same generator, the
// values are bitwise those of the model built at once.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <array>
#include <vector>

#include "core/model/llama_config.h"
#include "memsweep/attention.h"
#include "memsweep/kernels.h"
#include "memsweep/model.h"
#include "memsweep/strategy.h"

namespace memsweep::model {

// LlamaModel(config, kDeferred): parameters without memory until BuildGroup.
enum class Construction { kNow, kDeferred };

// The device parameters are initialised on, on this thread, while the scope lives: the CPU by
// default (the seeded values, then moved to the run's device); the meta device for an estimate
// (docs/estimate.md), where a parameter is its shape and dtype and nothing is drawn.
class ScopedParameterDevice {
 public:
  explicit ScopedParameterDevice(c10::DeviceType device);
  ~ScopedParameterDevice();
  ScopedParameterDevice(const ScopedParameterDevice&) = delete;
  ScopedParameterDevice& operator=(const ScopedParameterDevice&) = delete;

 private:
  c10::DeviceType previous_;
};

class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(int64_t dim, double eps, Construction construction = Construction::kNow);
  at::Tensor forward(const at::Tensor& x);
  void Build();  // ones
  // The kernels slot's RMSNorm (memsweep/kernels.h); empty: the composition of ATen operations.
  void SetKernel(RmsNormFn kernel) { kernel_ = std::move(kernel); }

 private:
  at::Tensor weight_;
  double eps_;
  RmsNormFn kernel_;
};
TORCH_MODULE(RmsNorm);

class DecoderBlockImpl : public torch::nn::Module, public Block {
 public:
  explicit DecoderBlockImpl(const LlamaConfig& config,
                            Construction construction = Construction::kNow);
  // Initialises a deferred block's parameters, drawing in the constructor's order.
  void Build();
  // x: [B, T, hidden]; cos, sin: [B, 1, T, head_dim].
  at::Tensor forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                     const AttentionInputs& inputs, const AttentionFn& attention);
  at::Tensor Attention(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                       const AttentionInputs& inputs, const AttentionFn& attention);
  const LlamaConfig& config() const { return config_; }
  at::Tensor Mlp(const at::Tensor& x);

  // Block (memsweep/model.h).
  at::Tensor Forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                     const AttentionInputs& inputs, const AttentionFn& attention) override {
    return forward(x, cos, sin, inputs, attention);
  }
  std::vector<at::Tensor> Parameters() const override { return parameters(); }
  std::shared_ptr<Block> Share() override;

  // The block's seven linear layers (q, k, v, o, gate, up, down), given their shapes
  // (model::ShapeOf) by the model that owns the block.
  void SetLinearShapes(const LinearShape* shapes);
  std::array<LinearLayer, 7>& linears() { return linears_; }
  // Registers an adapter's tensors as the block's parameters (after its own).
  void AddTensors(const std::vector<AdapterTensor>& tensors);
  // The kernels slot's RMSNorm and SwiGLU for this block (empty members: ATen's composition).
  void SetKernels(const Kernels& kernels);

 private:
  at::Tensor Apply(size_t layer, const at::Tensor& x) const;

  LlamaConfig config_;
  std::array<LinearLayer, 7> linears_;  // over the parameters below
  RmsNorm input_norm_{nullptr}, post_attention_norm_{nullptr};
  at::Tensor q_proj_, k_proj_, v_proj_, o_proj_;  // [out, in], as torch.nn.Linear
  at::Tensor gate_proj_, up_proj_, down_proj_;
  at::Tensor q_bias_, k_bias_, v_bias_, o_bias_;   // undefined unless the config has them
  at::Tensor gate_bias_, up_bias_, down_bias_;
  SwiGluFn swiglu_;  // the kernels slot's; empty: silu(gate) * up
};
TORCH_MODULE(DecoderBlock);

class LlamaModelImpl : public torch::nn::Module, public Model {
 public:
  explicit LlamaModelImpl(const LlamaConfig& config,
                          Construction construction = Construction::kNow);
  // Deferred construction: 1 + layers + 1 groups, built in order. BuildGroup returns the
  // group's parameters, now initialised on the CPU.
  size_t BuildGroupCount() const { return blocks_.size() + 2; }
  std::vector<at::Tensor> BuildGroup(size_t group);
  // input_ids, position_ids (and segment_ids, see AttentionInputs): [B, T] int64.
  // Returns logits [B, T, vocab]: the LM head over HiddenStates.
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& position_ids,
                     const at::Tensor& segment_ids = {});
  // The final norm's output [B, T, hidden]: what the LM head and the loss slot take.
  at::Tensor HiddenStates(const at::Tensor& input_ids, const at::Tensor& position_ids,
                          const at::Tensor& segment_ids = {});
  const LinearLayer& LmHead() const { return lm_head_layer_; }

  void SetAttention(AttentionFn attention) { attention_ = std::move(attention); }
  void SetBlockRunner(BlockRunner runner) { block_runner_ = std::move(runner); }
  // The kernels slot's RMSNorm and SwiGLU, for every block and the final norm.
  void SetKernels(const Kernels& kernels);
  const LlamaConfig& config() const { return config_; }
  const std::vector<DecoderBlock>& blocks() const { return blocks_; }

  // Registers an adapter's tensors of group `group` (AdapterStrategy::AdaptGroup) as
  // parameters: a block's with that block, the others with the model.
  void AddGroupTensors(size_t group, const std::vector<AdapterTensor>& tensors);

  // Model (memsweep/model.h).
  std::vector<at::Tensor> Parameters() const override { return parameters(); }
  std::vector<Block*> Blocks() const override;
  std::vector<LinearLayer*> Linears() override;
  at::Tensor Embedding() const override { return embed_tokens_; }
  const ModelShape& Shape() const override { return shape_; }

 private:
  LlamaConfig config_;
  ModelShape shape_;
  AttentionFn attention_;
  BlockRunner block_runner_ = RunBlockDirectly;
  at::Tensor embed_tokens_;  // [vocab, hidden]
  std::vector<DecoderBlock> blocks_;
  RmsNorm final_norm_{nullptr};
  at::Tensor lm_head_;  // [vocab, hidden]; the embedding itself when tied
  LinearLayer lm_head_layer_;  // over lm_head_
  size_t next_group_ = 0;  // deferred construction: the next group BuildGroup builds
};
TORCH_MODULE(LlamaModel);

// Rotary tables for the given positions: cos and sin of shape [B, 1, T, RotaryDim()], with the
// config's frequency scaling (rope_scaling) and, for LongRoPE, its attention factor applied.
std::pair<at::Tensor, at::Tensor> RotaryTables(const at::Tensor& position_ids,
                                               const LlamaConfig& config, c10::ScalarType dtype);

// Sum of next-token cross-entropy over targets != kIgnoreIndex, divided by `normalizer` (the
// number of real target tokens of the whole optimizer step, so micro-batches add up exactly).
at::Tensor NextTokenLoss(const at::Tensor& logits, const at::Tensor& targets, double normalizer);

}  // namespace memsweep::model
