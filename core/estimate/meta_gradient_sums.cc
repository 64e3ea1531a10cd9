#include "core/estimate/meta_gradient_sums.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/add_meta_dispatch.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/library.h>

#include <cstdint>

#include "core/env/silent_warnings.h"

namespace memsweep::estimate {
namespace {

// How deep this thread is in autograd nodes' own work (Node::operator(), recorded with the
// BACKWARD_FUNCTION scope). The engine's sums of a node's incoming gradients happen while it
// evaluates a node (get_current_node() is set) but outside any node's work.
thread_local int g_node_depth = 0;

std::unique_ptr<at::ObserverContext> EnterNode(const at::RecordFunction&) {
  ++g_node_depth;
  return nullptr;
}
void LeaveNode(const at::RecordFunction&, at::ObserverContext*) { --g_node_depth; }

bool InEngineSum() {
  return g_node_depth == 0 && !at::GradMode::is_enabled() &&
         torch::autograd::get_current_node() != nullptr;
}

// InputBuffer's condition for adding into `t` in place on a real device: dense, not a zero
// tensor, and the only reference to it and to its storage.
bool Reusable(const at::Tensor& t) {
  return !t._is_zerotensor() && !t.is_nested() && t.is_non_overlapping_and_dense() &&
         t.use_count() == 1 && t.has_storage() && t.storage().use_count() == 1;
}

at::Tensor Add(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  if (InEngineSum()) {
    // As InputBuffer's accumulate (dense gradients): old.add_(new) if the gradient already in
    // the buffer can take it, else a new sum.
    if (Reusable(self)) {
      at::Tensor sum = self;
      return at::meta::add_(sum, other, alpha);
    }
  }
  return at::meta::add(self, other, alpha);
}

}  // namespace

ScopedInPlaceGradientSums::ScopedInPlaceGradientSums() {
  const env::SilentWarnings quiet;  // registering over LibTorch's meta kernel is the point
  library_ = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::Meta,
                                              __FILE__, __LINE__);
  library_->impl("add.Tensor", TORCH_FN(Add));
  callback_ = at::addGlobalCallback(
      at::RecordFunctionCallback(&EnterNode, &LeaveNode).scopes({at::RecordScope::BACKWARD_FUNCTION}));
}

ScopedInPlaceGradientSums::~ScopedInPlaceGradientSums() {
  at::removeCallback(callback_);
  const env::SilentWarnings quiet;
  library_.reset();
}

}  // namespace memsweep::estimate
