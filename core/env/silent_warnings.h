// SilentWarnings: LibTorch's warnings dropped while the guard lives, on this thread. Registering a
// kernel over one LibTorch already has makes the dispatcher warn once per operator; where the
// override is the point (memsweep's CPU GEMM kernels, the estimate's meta kernels and autocast),
// those warnings are not shown.
//
//   { env::SilentWarnings quiet;  library->impl("mm", ...); }
#pragma once

#include <c10/util/Exception.h>

namespace memsweep::env {

class SilentWarnings {
 public:
  SilentWarnings() : guard_(&handler_) {}

 private:
  struct Handler final : c10::WarningHandler {
    void process(const c10::Warning&) override {}
  };
  Handler handler_;  // declared before the guard, which points to it
  c10::WarningUtils::WarningHandlerGuard guard_;
};

}  // namespace memsweep::env
