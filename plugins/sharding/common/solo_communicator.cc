#include "solo_communicator.h"

namespace memsweep::sharding {

void SoloCommunicator::AllGather(const at::Tensor& input, std::vector<at::Tensor>& outputs) {
  outputs.at(0).copy_(input);
}

void SoloCommunicator::AllToAll(at::Tensor& output, at::Tensor& input) { output.copy_(input); }

}  // namespace memsweep::sharding
