// Communicator: the collectives a sharding strategy uses over the run's process group (one rank
// per process, c10d underneath: Gloo on CPU). RunContext::comm points to it when
// device.world_size > 1, and is null in a single-process run.
//
// The host times every call and counts its payload bytes (figures comm_seconds, comm_bytes,
// comm_calls; docs/metrics.md). There is no reduce-scatter and no AVG (Gloo in LibTorch 1.13 had
// neither): strategies build reduce-scatter from AllToAll + a local sum (or one ReduceSum per
// owner) and average by dividing. bf16 tensors are taken as they are (they travel
// as fp16 views of their bits, and the sums add in fp32 on the receiving rank, in rank order,
// rounding once to bf16), so strategies pass bf16 gradients and parameters as they are.
//
//   at::Tensor g = ...;           // fp32, contiguous
//   ctx.comm->AllReduceSum(g);    // every rank now holds the sum
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace memsweep {

class Communicator {
 public:
  virtual ~Communicator();
  virtual int Rank() const = 0;
  virtual int WorldSize() const = 0;
  // In place: every rank ends with the element-wise sum over ranks. Contiguous
  // fp32/fp64/int64/bf16 (bf16: summed in fp32, every rank ends with the same values).
  virtual void AllReduceSum(at::Tensor& tensor) = 0;
  // In place: every rank ends with root's tensor (contiguous, same shape everywhere).
  virtual void Broadcast(at::Tensor& tensor, int root) = 0;
  // outputs[r] := rank r's input (outputs sized like input, one per rank).
  virtual void AllGather(const at::Tensor& input, std::vector<at::Tensor>& outputs) = 0;
  // Equal splits along dim 0: input chunk r goes to rank r; output chunk r came from rank r.
  virtual void AllToAll(at::Tensor& output, at::Tensor& input) = 0;
  virtual void Barrier() = 0;
  // In place: root's tensor ends as the element-wise sum over ranks; on the other ranks the
  // tensor's contents are unspecified afterwards (it may serve as scratch). Contiguous
  // fp32/fp64/int64/bf16.
  virtual void ReduceSum(at::Tensor& tensor, int root) = 0;
};

}  // namespace memsweep
