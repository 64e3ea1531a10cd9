#include "flash_attention.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

namespace memsweep::plugins::flash {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class FlashAttentionFunction : public torch::autograd::Function<FlashAttentionFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, const at::Tensor& cu_seqlens, int64_t q_tile,
                            int64_t k_tile, int64_t isa) {
    const TileSizes tiles{q_tile, k_tile};
    const auto sequences = SequencesFromCuSeqlens(cu_seqlens, q.size(0), q.size(2));
    FlashOutputs fwd = FlashForward(q, k, v, sequences, tiles, static_cast<Isa>(isa));
    ctx->save_for_backward({q, k, v, fwd.out, fwd.lse, cu_seqlens});
    ctx->saved_data["q_tile"] = q_tile;
    ctx->saved_data["k_tile"] = k_tile;
    ctx->saved_data["isa"] = isa;
    return fwd.out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &out = saved[3],
                     &lse = saved[4], &cu_seqlens = saved[5];
    const TileSizes tiles{ctx->saved_data["q_tile"].toInt(), ctx->saved_data["k_tile"].toInt()};
    const auto sequences = SequencesFromCuSeqlens(cu_seqlens, q.size(0), q.size(2));
    const auto isa = static_cast<Isa>(ctx->saved_data["isa"].toInt());
    FlashGrads g = FlashBackward(q, k, v, out, lse, grad_outputs[0], sequences, tiles, isa);
    return {g.dq, g.dk, g.dv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

c10::ScalarType ComputeType(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const c10::ScalarType common =
      at::promote_types(at::promote_types(q.scalar_type(), k.scalar_type()), v.scalar_type());
  return common == at::kBFloat16 ? at::kBFloat16 : at::kFloat;
}

}  // namespace

at::Tensor FlashAttentionVarlen(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const at::Tensor& cu_seqlens, TileSizes tiles, Isa isa) {
  const at::Tensor cu =
      cu_seqlens.defined() ? cu_seqlens : WholeRowCuSeqlens(q.size(0), q.size(2));
  const c10::ScalarType compute = ComputeType(q, k, v);
  const c10::ScalarType result = at::promote_types(
      at::promote_types(q.scalar_type(), k.scalar_type()), v.scalar_type());
  const at::Tensor out = FlashAttentionFunction::apply(q.to(compute), k.to(compute),
                                                       v.to(compute), cu, tiles.q_tile,
                                                       tiles.k_tile,
                                                       static_cast<int64_t>(isa));
  return out.to(result);
}

model::AttentionFn MakeFlashAttention(TileSizes tiles, Isa isa) {
  return [tiles, isa](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                 const model::AttentionInputs& inputs) {
    // The estimate's meta tensors have no segment ids to read: whole rows (the kernel's
    // allocations do not depend on where documents start; flash_kernel.cc).
    const at::Tensor cu = inputs.segment_ids.defined() && !q.is_meta()
                              ? CuSeqlensFromSegmentIds(inputs.segment_ids)
                              : at::Tensor();
    return FlashAttentionVarlen(q, k, v, cu, tiles, isa);
  };
}

}  // namespace memsweep::plugins::flash
