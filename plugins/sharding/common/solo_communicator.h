// SoloCommunicator: the group of one, so that a sharding plugin runs unchanged when
// device.world_size = 1 (every collective is the identity).
#pragma once

#include "memsweep/collectives.h"

namespace memsweep::sharding {

class SoloCommunicator final : public Communicator {
 public:
  int Rank() const override { return 0; }
  int WorldSize() const override { return 1; }
  void AllReduceSum(at::Tensor&) override {}
  void Broadcast(at::Tensor&, int) override {}
  void AllGather(const at::Tensor& input, std::vector<at::Tensor>& outputs) override;
  void AllToAll(at::Tensor& output, at::Tensor& input) override;
  void Barrier() override {}
  void ReduceSum(at::Tensor&, int) override {}
};

}  // namespace memsweep::sharding
