#include "fused_linear_cross_entropy.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <stdexcept>
#include <vector>

#include "../common/token_loss.h"
#include "memsweep/allocation_label.h"
#include "memsweep/autocast.h"
#include "memsweep/compute_device.h"
#include "memsweep/batch.h"

namespace memsweep::plugins::loss {
namespace {

// Everything FusedFunction needs besides its differentiable inputs.
struct FusedCall {
  const model::LinearLayer* head = nullptr;
  at::Tensor targets;  // [N] int64
  double normalizer = 1.0;
  FusedLossOptions options;
};

at::Tensor InDtype(const at::Tensor& t, c10::ScalarType dtype) {
  return t.scalar_type() == dtype ? t : t.to(dtype);
}

// Whether CUDA's GEMM with 16-bit operands and an fp32 output (addmm's out_dtype) is usable.
std::atomic<bool> cuda_fp32_output_gemm{true};

// The sums of the head's gradients over the chunks, in fp32 or in the tensor's own dtype.
class GradientSum {
 public:
  GradientSum(const at::Tensor& like, bool fp32) {
    if (!like.defined() || !like.requires_grad()) return;
    sum_ = at::zeros(like.sizes(), like.options().dtype(fp32 ? at::kFloat : like.scalar_type()));
    dtype_ = like.scalar_type();
  }
  bool active() const { return sum_.defined(); }
  // sum += aᵀ·b (the weight's gradient of one chunk), in place. A sum in fp32 over operands in
  // the compute dtype takes the operands upcast — copies of the chunk's size — rather than their
  // product in the compute dtype, which would be a temporary of the head's size at every chunk:
  // the product is then rounded once, into the fp32 sum.
  // On CUDA, 16-bit operands go to a GEMM with an fp32 output (cuBLAS accumulates in fp32 and
  // adds into the sum), which runs on the tensor cores where the upcast copies would take an
  // fp32 GEMM at a fraction of their speed: the same products, summed in fp32 either way.
  void AddProduct(const at::Tensor& a_t, const at::Tensor& b) {
    const c10::ScalarType sum = sum_.scalar_type();
    if (ComputeDevice(sum_) == c10::DeviceType::CUDA && sum == at::kFloat &&
        a_t.scalar_type() != sum && a_t.scalar_type() == b.scalar_type() &&
        cuda_fp32_output_gemm.load()) {
      // An estimate of a CUDA run: that GEMM adds into the sum in place and allocates nothing.
      if (sum_.is_meta()) return;
      try {
        at::addmm_out(sum_, sum_, a_t, b, at::kFloat);
        return;
      } catch (const c10::Error&) {
        cuda_fp32_output_gemm = false;  // a GPU or cuBLAS without it: the upcast path from now on
      }
    }
    sum_.addmm_(InDtype(a_t, sum), InDtype(b, sum));
  }
  void Add(const at::Tensor& t) { sum_.add_(t); }
  // The sum in the tensor's dtype (the fp32 buffer is released).
  at::Tensor Finish() {
    if (!sum_.defined()) return {};
    at::Tensor out = sum_.scalar_type() == dtype_ ? sum_ : sum_.to(dtype_);
    sum_ = at::Tensor();
    return out;
  }

 private:
  at::Tensor sum_;
  c10::ScalarType dtype_ = at::kFloat;
};

// One chunk of a plain head (no adapter forward): logits, their loss and, from softmax −
// one-hot, the gradients — by hand, so that only the chunk's logits (and their fp32 copy) exist.
void PlainChunk(const at::Tensor& h, const at::Tensor& weight, const at::Tensor& bias,
                const at::Tensor& t, const FusedCall& call, at::Tensor& loss_sum,
                at::Tensor grad_h, GradientSum& grad_w, GradientSum& grad_b) {
  // On the CPU the chunk's logits are (W·hᵀ)ᵀ — the [V, n] product with the head as the left
  // operand, a transposed view of [n, V] — rather than h·Wᵀ: with a few hundred tokens against a
  // vocabulary of 10⁵ the CPU's GEMM runs that shape about 1.5x faster (docs/loss.md, "The
  // benchmark"). On CUDA, h·Wᵀ: cuBLAS runs both shapes alike, and the softmax's reductions and
  // scatters over rows of contiguous [n, V] logits run faster than over a transposed view.
  // The compute dtype is autocast's, if on (mm is on its list, as linear is).
  const bool cuda = ComputeDevice(h) == c10::DeviceType::CUDA;  // an estimate of a CUDA run too
  at::Tensor logits = cuda ? at::mm(h, weight.t()) : at::mm(weight, h.t()).t();
  if (bias.defined()) logits = logits + InDtype(bias, logits.scalar_type());
  const c10::ScalarType compute = logits.scalar_type();
  at::Tensor x = call.options.upcast ? InDtype(logits, at::kFloat) : logits;
  logits = at::Tensor();
  const at::Tensor valid = t.ne(data::kIgnoreIndex);
  const at::Tensor index = t.masked_fill(valid.logical_not(), 0).unsqueeze(1);
  const at::Tensor picked = x.gather(1, index).squeeze(1);
  // log Σ exp in place, as the vocabulary blocks do it: at::logsumexp would allocate a temporary
  // of the chunk's logits' size, doubling what a chunk holds (ChunkBytesPerToken counts one).
  // x becomes exp(x − max), and the softmax is x / Σ.
  const at::Tensor m = at::amax(x, {1}, /*keepdim=*/true);
  x.sub_(m).exp_();
  const at::Tensor sum = at::sum(x, {1}, /*keepdim=*/true, at::kFloat);
  const at::Tensor lse = sum.log().add_(m).squeeze(1);
  loss_sum.add_(InDtype(lse - picked, at::kFloat).masked_fill(valid.logical_not(), 0).sum());
  if (!grad_h.defined() && !grad_w.active() && !grad_b.active()) return;
  // d loss / d x = (softmax(x) − one-hot(t)) / normalizer on rows with a target, 0 elsewhere.
  const at::Tensor row_scale = valid.to(x.scalar_type()).div_(call.normalizer).unsqueeze(1);
  x.mul_(row_scale / sum);
  x.scatter_add_(1, index, row_scale.neg());
  const at::Tensor g = InDtype(x, compute);
  // On the CPU (Wᵀ·gᵀ)ᵀ for g·W, the head as the left operand again: gᵀ is the [V, n] layout the
  // logits were computed in.
  if (grad_h.defined()) {
    const at::Tensor w = InDtype(weight, compute);
    grad_h.copy_(cuda ? at::mm(g, w) : at::mm(w.t(), g.t()).t());
  }
  if (grad_w.active()) grad_w.AddProduct(g.t(), InDtype(h, compute));
  if (grad_b.active()) grad_b.Add(g.sum(0));
}

// A vocabulary block's logits for every token: [N, v1 − v0], upcast to fp32 when asked.
at::Tensor BlockLogits(const at::Tensor& h, const at::Tensor& weight, const at::Tensor& bias,
                       int64_t v0, int64_t v1, bool upcast) {
  at::Tensor logits = at::mm(h, weight.slice(0, v0, v1).t());
  if (bias.defined()) logits = logits + InDtype(bias.slice(0, v0, v1), logits.scalar_type());
  return upcast ? InDtype(logits, at::kFloat) : logits;
}

// The gradients FusedOrder::kVocab hands to backward.
struct VocabGradients {
  at::Tensor hidden, weight, bias;
};

// The whole loss of a plain head by vocabulary blocks (FusedOrder::kVocab, the header says why).
// Pass 1: each token's log-sum-exp, combined over the blocks, and its target's logit. Pass 2:
// each block's logits again, softmax − one-hot scaled as in PlainChunk, then the block's rows of
// the head's gradients in one product over all tokens and its share of the hidden states'
// gradient, summed over the blocks (in fp32 with fp32_accumulation).
VocabGradients PlainVocabBlocks(const at::Tensor& hidden, const at::Tensor& weight,
                                const at::Tensor& bias, const FusedCall& call, int64_t block_rows,
                                c10::ScalarType compute, at::Tensor& loss_sum) {
  const int64_t vocab = weight.size(0);
  const at::Tensor& t = call.targets;
  const at::Tensor valid = t.ne(data::kIgnoreIndex);
  const bool upcast = call.options.upcast;
  const std::vector<RowRange> blocks = ChunkRows(vocab, block_rows);
  at::Tensor lse, picked;
  {
    memory::AllocationLabel label("logits");
    picked = at::zeros({t.size(0)}, hidden.options().dtype(at::kFloat));
    for (const RowRange& b : blocks) {
      at::Tensor x = BlockLogits(hidden, weight, bias, b.begin, b.end, upcast);
      const at::Tensor in_block = valid.logical_and(t.ge(b.begin)).logical_and_(t.lt(b.end));
      const at::Tensor local = (t - b.begin).clamp_(0, b.end - b.begin - 1).unsqueeze(1);
      picked.add_(InDtype(x.gather(1, local).squeeze(1), at::kFloat)
                      .masked_fill_(in_block.logical_not(), 0));
      // log Σ exp in place (x is this block's alone): no temporaries of the block's size.
      const at::Tensor m = at::amax(x, {1}, /*keepdim=*/true);
      x.sub_(m).exp_();
      at::Tensor block_lse = at::sum(x, {1}, /*keepdim=*/false, at::kFloat).log_();
      block_lse.add_(InDtype(m.squeeze(1), at::kFloat));
      lse = lse.defined() ? at::logaddexp(lse, block_lse) : block_lse;
    }
  }
  loss_sum.add_((lse - picked).masked_fill_(valid.logical_not(), 0).sum());

  VocabGradients out;
  const bool want_h = hidden.requires_grad();
  const bool want_w = weight.requires_grad();
  const bool want_b = bias.defined() && bias.requires_grad();
  if (!want_h && !want_w && !want_b) return out;
  memory::AllocationLabel gradients_label("loss gradients");
  GradientSum grad_h(hidden, call.options.fp32_accumulation);
  if (want_w) out.weight = at::empty_like(weight);
  if (want_b) out.bias = at::empty_like(bias);
  const at::Tensor h = InDtype(hidden, compute);
  for (const RowRange& b : blocks) {
    memory::AllocationLabel label("logits");
    at::Tensor x = BlockLogits(hidden, weight, bias, b.begin, b.end, upcast);
    const c10::ScalarType xt = x.scalar_type();
    const at::Tensor in_block = valid.logical_and(t.ge(b.begin)).logical_and_(t.lt(b.end));
    const at::Tensor local = (t - b.begin).clamp_(0, b.end - b.begin - 1).unsqueeze(1);
    x.sub_(lse.unsqueeze(1)).exp_();
    x.scatter_add_(1, local, in_block.to(xt).neg_().unsqueeze(1));
    x.mul_(valid.to(xt).div_(call.normalizer).unsqueeze(1));
    if (want_b) out.bias.slice(0, b.begin, b.end).copy_(x.sum(0));
    const at::Tensor g = InDtype(x, compute);
    x = at::Tensor();
    if (want_w) {
      at::Tensor rows = out.weight.slice(0, b.begin, b.end);
      if (rows.scalar_type() == compute) {
        at::mm_out(rows, g.t(), h);
      } else {
        rows.copy_(at::mm(g.t(), h));
      }
    }
    if (want_h) grad_h.AddProduct(g, InDtype(weight.slice(0, b.begin, b.end), compute));
  }
  out.hidden = grad_h.Finish();
  return out;
}

// One chunk of a head whose forward an adapter set: autograd on the chunk's own small graph.
void AdaptedChunk(const at::Tensor& hidden_chunk, const at::Tensor& t, const FusedCall& call,
                  at::Tensor& loss_sum, at::Tensor grad_h,
                  std::vector<std::pair<at::Tensor, GradientSum*>>& params) {
  at::AutoGradMode grad_mode(true);
  const at::Tensor h = hidden_chunk.detach().requires_grad_(grad_h.defined());
  const at::Tensor part =
      SummedCrossEntropy(model::ApplyLinear(*call.head, h), t, call.options.upcast)
          .to(at::kFloat)
          .div(call.normalizer);
  std::vector<at::Tensor> inputs;
  if (grad_h.defined()) inputs.push_back(h);
  for (auto& [param, sum] : params) inputs.push_back(param);
  if (!inputs.empty()) {
    const std::vector<at::Tensor> grads =
        torch::autograd::grad({part}, inputs, {}, /*retain_graph=*/false,
                              /*create_graph=*/false, /*allow_unused=*/true);
    size_t i = 0;
    if (grad_h.defined()) grad_h.copy_(grads[i++]);
    for (auto& [param, sum] : params) {
      if (grads[i].defined()) sum->Add(grads[i]);
      ++i;
    }
  }
  loss_sum.add_(part.detach() * call.normalizer);
}

struct FusedFunction : public torch::autograd::Function<FusedFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& hidden,
                            const at::Tensor& weight, const std::optional<at::Tensor>& bias_in,
                            at::TensorList extra, const FusedCall* call) {
    const at::Tensor bias = bias_in.value_or(at::Tensor());
    const int64_t n = hidden.size(0);
    const bool fp32 = call->options.fp32_accumulation;
    const c10::DeviceType device = hidden.device().type();
    const c10::ScalarType compute =
        AutocastEnabled(device) ? AutocastDtype(device)
                                : c10::promoteTypes(hidden.scalar_type(), weight.scalar_type());
    // The device the run stands for (an estimate's meta tensors stand for the CPU or CUDA), so
    // that `memsweep estimate` chunks as the run does.
    const int64_t rows = call->options.chunk_tokens > 0
                             ? call->options.chunk_tokens
                             : DefaultChunkTokens(n, weight.size(0), weight.size(1),
                                                  ComputeDevice(hidden), compute);
    const bool adapted = static_cast<bool>(call->head->forward);
    if (PickOrder(call->options, weight.requires_grad(), adapted, compute) == FusedOrder::kVocab) {
      if (adapted) {
        throw std::invalid_argument(
            "loss/fused: order = \"vocab\" needs a plain LM head, and an adapter set this head's "
            "forward; write order = \"tokens\" (or \"auto\")");
      }
      at::Tensor loss_sum = at::zeros({}, hidden.options().dtype(at::kFloat));
      const VocabGradients g = PlainVocabBlocks(
          hidden, weight, bias, *call, VocabBlockRows(n, weight.size(0), rows), compute, loss_sum);
      std::vector<at::Tensor> saved = {g.hidden, g.weight, g.bias};
      for (const at::Tensor& e : extra) {
        saved.push_back(e.requires_grad() ? at::zeros_like(e) : at::Tensor());
      }
      ctx->save_for_backward(saved);
      return loss_sum.div_(call->normalizer);
    }
    memory::AllocationLabel gradients_label("loss gradients");
    at::Tensor grad_h = hidden.requires_grad() ? at::empty_like(hidden) : at::Tensor();
    GradientSum grad_w(weight, fp32), grad_b(bias, fp32);
    std::vector<GradientSum> extra_sums;
    for (const at::Tensor& e : extra) extra_sums.emplace_back(e, fp32);
    at::Tensor loss_sum = at::zeros({}, hidden.options().dtype(at::kFloat));
    std::vector<std::pair<at::Tensor, GradientSum*>> params;  // the adapted head's, for autograd
    if (call->head->forward) {
      if (grad_w.active()) params.emplace_back(weight, &grad_w);
      if (grad_b.active()) params.emplace_back(bias, &grad_b);
      for (size_t i = 0; i < extra.size(); ++i) {
        if (extra_sums[i].active()) params.emplace_back(extra[i], &extra_sums[i]);
      }
    }
    for (const RowRange& r : ChunkRows(n, rows)) {
      const at::Tensor h = hidden.slice(0, r.begin, r.end);
      const at::Tensor t = call->targets.slice(0, r.begin, r.end);
      const at::Tensor gh = grad_h.defined() ? grad_h.slice(0, r.begin, r.end) : at::Tensor();
      memory::AllocationLabel logits_label("logits");
      if (call->head->forward) {
        AdaptedChunk(h, t, *call, loss_sum, gh, params);
      } else {
        PlainChunk(h, weight, bias, t, *call, loss_sum, gh, grad_w, grad_b);
      }
    }
    std::vector<at::Tensor> saved = {grad_h, grad_w.Finish(), grad_b.Finish()};
    for (GradientSum& s : extra_sums) saved.push_back(s.Finish());
    ctx->save_for_backward(saved);
    return loss_sum.div_(call->normalizer);
  }

  static std::vector<at::Tensor> backward(torch::autograd::AutogradContext* ctx,
                                          std::vector<at::Tensor> grad_outputs) {
    std::vector<at::Tensor> grads = ctx->get_saved_variables();
    const at::Tensor& scale = grad_outputs[0];  // 1, or a loss scale
    for (at::Tensor& g : grads) {
      if (g.defined()) g.mul_(scale);  // in place: the buffers are this node's alone
    }
    grads.emplace_back();  // the FusedCall
    return grads;
  }
};

}  // namespace

FusedOrder PickOrder(const FusedLossOptions& options, bool weight_gradient, bool adapted_head,
                     c10::ScalarType compute) {
  if (options.order != FusedOrder::kAuto) return options.order;
  const bool narrow = compute == at::kBFloat16 || compute == at::kHalf;
  return weight_gradient && options.fp32_accumulation && options.upcast && !adapted_head && narrow
             ? FusedOrder::kVocab
             : FusedOrder::kTokens;
}

int64_t VocabBlockRows(int64_t tokens, int64_t vocab, int64_t chunk_tokens) {
  const int64_t chunk = std::max<int64_t>(1, chunk_tokens);
  const int64_t pieces = std::max<int64_t>(1, (tokens + chunk - 1) / chunk);
  const int64_t rows = (vocab + pieces - 1) / pieces;
  return std::min(vocab, std::max<int64_t>(8, (rows + 7) / 8 * 8));
}

int64_t LigerChunkTokens(int64_t tokens, int64_t vocab, int64_t hidden) {
  const int64_t factor = std::max<int64_t>(1, (vocab + hidden - 1) / hidden);
  const int64_t rows = std::max<int64_t>(1, (tokens + factor - 1) / factor);
  int64_t power = 1;
  while (power < rows) power <<= 1;
  return power;
}

int64_t ChunkBytesPerToken(int64_t vocab, int64_t hidden, c10::ScalarType compute) {
  const int64_t size = static_cast<int64_t>(c10::elementSize(compute));
  // fp32: the logits alone (softmax and its gradient are written over them). 16-bit: the fp32
  // copy beside the logits, then beside the gradient rounded to the compute dtype — and on the
  // CPU the upcast GEMM's fp32 output beside its 16-bit result (core/env/cpu_gemm.h).
  const int64_t per_logit = size >= 4 ? size : size + 4;
  // The [hidden, n] product of the hidden states' gradient before it is copied into place (with
  // a 16-bit compute dtype the CPU's upcast GEMM's fp32 output beside it), and the per-token
  // vectors (targets' mask and index, max, sum, log-sum-exp, target logit, row scale).
  const int64_t per_hidden = size >= 4 ? size : size + 4;
  return vocab * per_logit + hidden * per_hidden + 64;
}

int64_t DefaultChunkTokens(int64_t tokens, int64_t vocab, int64_t hidden, c10::DeviceType device,
                           c10::ScalarType compute) {
  const int64_t liger = LigerChunkTokens(tokens, vocab, hidden);
  if (device == c10::DeviceType::CUDA || tokens <= 1) return liger;
  // The largest chunk whose transient bytes stay within a quarter of the fp32 logits
  // (4·tokens·vocab / 4 bytes).
  const int64_t bound = std::max<int64_t>(1, tokens * vocab / ChunkBytesPerToken(vocab, hidden, compute));
  const int64_t longest = std::min({tokens, bound, std::max(liger, kCpuGemmChunkTokens)});
  // Even chunks: as many as that length needs, each ⌈tokens / pieces⌉ — rounded up to a multiple
  // of 16 (a 16-float AVX-512 register: the CPU's GEMM runs 112-token chunks about 10 % faster
  // than 103-token ones) where that stays within the longest.
  const int64_t pieces = (tokens + longest - 1) / longest;
  const int64_t even = (tokens + pieces - 1) / pieces;
  const int64_t aligned = (even + 15) / 16 * 16;
  return aligned <= longest ? aligned : even;
}

at::Tensor FusedLinearCrossEntropy(const model::LossInputs& inputs,
                                   const FusedLossOptions& options) {
  FusedCall call;
  call.head = inputs.head;
  call.targets = inputs.targets.reshape({-1});
  call.normalizer = inputs.normalizer;
  call.options = options;
  const at::Tensor hidden = inputs.hidden.reshape({-1, inputs.hidden.size(-1)});
  // An undefined bias is no input of the node (a custom function's tensor inputs must be
  // defined); its gradient slot stays empty.
  const at::Tensor& bias = inputs.head->bias;
  return FusedFunction::apply(hidden, inputs.head->weight,
                              bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt,
                              at::TensorList(inputs.head->forward_tensors), &call);
}

}  // namespace memsweep::plugins::loss
