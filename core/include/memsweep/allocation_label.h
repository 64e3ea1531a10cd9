// AllocationLabel: says what the tensors allocated on this thread while it lives are, so that a
// run's largest single allocation can be named ("logits", "attention scores", ...;
// docs/metrics.md, "The largest allocation"). Labels nest; the innermost one counts.
//
//   {
//     memsweep::memory::AllocationLabel label("logits");
//     logits = at::linear(hidden, weight);
//   }
//
// A label must be a string literal (or outlive the run). Allocations autograd makes in backward
// run outside the forward's scopes and are named only by their stage.
#pragma once

namespace memsweep::memory {

class AllocationLabel {
 public:
  explicit AllocationLabel(const char* what);
  ~AllocationLabel();
  AllocationLabel(const AllocationLabel&) = delete;
  AllocationLabel& operator=(const AllocationLabel&) = delete;

 private:
  const char* previous_;
};

// The innermost label of this thread, or "" outside every label.
const char* CurrentAllocationLabel();

}  // namespace memsweep::memory
