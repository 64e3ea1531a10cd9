// StepTimer: the wall time of one training step. On the CPU a steady clock; on a CUDA device a
// pair of CUDA events recorded on the current stream around the step and synchronised at its
// end, so the time covers the kernels the step queued, not only the host's launching of them.
//
//   StepTimer timer(device);
//   timer.Start();
//   ... step ...
//   double seconds = timer.Stop();   // synchronises the device's stream on CUDA
#pragma once

#include <c10/core/Device.h>
#include <c10/core/Event.h>

#include <chrono>
#include <optional>

namespace memsweep::train {

class StepTimer {
 public:
  explicit StepTimer(c10::Device device);
  void Start();
  double Stop();

 private:
  c10::Device device_;
  std::chrono::steady_clock::time_point start_;
  std::optional<c10::Event> begin_, end_;
};

// Waits for everything queued on the device (no-op on the CPU).
void SynchronizeDevice(const c10::Device& device);

}  // namespace memsweep::train
