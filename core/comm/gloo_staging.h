// GlooStagedCommunicator: the collectives as memsweep runs them over Gloo (the CPU's process
// group, process_group.cc): data-only moves take a bf16 tensor as an fp16 view of its bits, and
// bf16 sums move bits and add on the receiving rank, in fp32 and in rank order, rounding once —
// in pieces, to bound the staging buffers. Every call is timed and its payload counted.
//
// What Gloo itself does with the buffers (the transport) is the subclass's: the real process
// group's, or the estimate's shape-only one (core/estimate/meta_communicator.h), which so takes
// the same staging buffers, in the same order, as a real rank.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "core/comm/process_group.h"

namespace memsweep::dist {

class GlooStagedCommunicator : public CountingCommunicator {
 public:
  GlooStagedCommunicator(int rank, int world) : rank_(rank), world_(world) {}

  int Rank() const override { return rank_; }
  int WorldSize() const override { return world_; }
  CommCounters Counters() const override { return counters_; }

  void AllReduceSum(at::Tensor& tensor) override;
  void Broadcast(at::Tensor& tensor, int root) override;
  void AllGather(const at::Tensor& input, std::vector<at::Tensor>& outputs) override;
  void AllToAll(at::Tensor& output, at::Tensor& input) override;
  void Barrier() override;
  void ReduceSum(at::Tensor& tensor, int root) override;

 protected:
  // The transport, one call per collective, each waited for. Tensors are contiguous; bf16 ones
  // arrive as fp16 views except in SendAllReduce and SendReduce, which never see bf16.
  virtual void SendAllReduce(at::Tensor& tensor) = 0;                   // in-place sum
  virtual void SendBroadcast(at::Tensor& tensor, int root) = 0;         // in place
  virtual void SendAllGather(std::vector<at::Tensor>& outputs, const at::Tensor& input) = 0;
  virtual void SendAllToAll(at::Tensor& output, at::Tensor& input) = 0;  // equal splits, dim 0
  virtual void SendBarrier() = 0;
  virtual void SendReduce(at::Tensor& tensor, int root) = 0;            // in-place sum at root
  // Every rank's input into `outputs` (one per rank) at the root; `outputs` is empty elsewhere.
  virtual void SendGather(std::vector<at::Tensor>& outputs, const at::Tensor& input, int root) = 0;

 private:
  void AllReduceBf16(at::Tensor piece);
  void ReduceBf16(at::Tensor piece, int root);
  template <typename Send>
  void Run(int64_t bytes, Send&& send);

  int rank_, world_;
  CommCounters counters_;
};

}  // namespace memsweep::dist
