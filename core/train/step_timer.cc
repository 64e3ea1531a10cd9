#include "core/train/step_timer.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace memsweep::train {
namespace {

c10::Stream CurrentStream(const c10::Device& device) {
  return c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
}

}  // namespace

StepTimer::StepTimer(c10::Device device) : device_(device) {}

void StepTimer::Start() {
  start_ = std::chrono::steady_clock::now();
  if (device_.is_cpu() || device_.is_meta()) return;  // host clock (meta: an estimate)
  // BACKEND_DEFAULT: events that keep timing (PyTorch's default disables it).
  begin_.emplace(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
  end_.emplace(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
  begin_->record(CurrentStream(device_));
}

double StepTimer::Stop() {
  if (device_.is_cpu() || !begin_) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  end_->record(CurrentStream(device_));
  end_->synchronize();
  return begin_->elapsedTime(*end_) / 1000.0;  // milliseconds
}

void SynchronizeDevice(const c10::Device& device) {
  if (device.is_cpu() || device.is_meta()) return;
  c10::impl::getDeviceGuardImpl(device.type())->synchronizeDevice(device.index());
}

}  // namespace memsweep::train
