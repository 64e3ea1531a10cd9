#include "core/estimate/blas_workspaces.h"

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <regex>
#include <stdexcept>

#include "core/memory/tracking_allocator.h"

namespace memsweep::estimate {
namespace {

// Operations whose CUDA kernels call cuBLAS (and so fetch the thread's handle and its workspace).
// Composite operations (linear, matmul) reach one of these.
constexpr std::array<const char*, 12> kBlasOps = {
    "aten::mm",  "aten::addmm", "aten::bmm", "aten::baddbmm",     "aten::addbmm",  "aten::addmv",
    "aten::mv",  "aten::dot",   "aten::vdot", "aten::_scaled_mm", "aten::_int_mm", "aten::_addmm_activation"};

bool IsBlasOp(const char* name) {
  for (const char* op : kBlasOps) {
    if (std::strcmp(op, name) == 0) return true;
  }
  return false;
}

struct Workspaces {
  int64_t bytes = 0;
  std::mutex mutex;
  c10::DataPtr forward;   // the caller's thread
  c10::DataPtr backward;  // autograd's thread for the GPU
  int taken = 0;
};
Workspaces* g_active = nullptr;

std::unique_ptr<at::ObserverContext> OnOperator(const at::RecordFunction& fn) {
  Workspaces* w = g_active;
  if (w == nullptr || !IsBlasOp(fn.name())) return nullptr;
  const bool backward =
      std::strcmp(memory::TrackingAllocator::Instance().Stage(), "backward") == 0;
  std::lock_guard<std::mutex> lock(w->mutex);
  c10::DataPtr& slot = backward ? w->backward : w->forward;
  if (!slot) {
    slot = c10::GetAllocator(c10::DeviceType::Meta)->allocate(static_cast<size_t>(w->bytes));
    ++w->taken;
  }
  return nullptr;
}

at::CallbackHandle g_handle = 0;

}  // namespace

int64_t CublasWorkspaceBytes(int compute_capability,
                             const std::optional<std::string>& cublas_workspace_config) {
  const int64_t fallback =
      compute_capability == 90 ? int64_t{4096} * 8 * 1024 : int64_t{4096} * 1024 * 2 + 16 * 1024 * 8;
  if (!cublas_workspace_config) return fallback;
  // As LibTorch reads it: every ":SIZE:COUNT" adds SIZE x COUNT KiB; nothing parsable = default.
  static const std::regex kEntry(":([0-9]+):([0-9]+)");
  int64_t total = 0;
  bool any = false;
  for (std::sregex_iterator it(cublas_workspace_config->begin(), cublas_workspace_config->end(),
                               kEntry),
       end;
       it != end; ++it) {
    total += std::stoll((*it)[1].str()) * 1024 * std::stoll((*it)[2].str());
    any = true;
  }
  return any ? total : fallback;
}

int64_t CublasWorkspaceBytes(int compute_capability) {
  const char* value = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  return CublasWorkspaceBytes(compute_capability,
                              value ? std::optional<std::string>(value) : std::nullopt);
}

std::optional<int> ParseComputeCapability(std::string_view text) {
  if (text.rfind("sm_", 0) == 0) text.remove_prefix(3);
  int major = 0, minor = 0;
  const size_t dot = text.find('.');
  const auto digits = [](std::string_view part, int& value) {
    if (part.empty() || part.size() > 3) return false;
    for (char c : part) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + (c - '0');
    }
    return true;
  };
  int value = 0;
  if (dot == std::string_view::npos) {
    if (!digits(text, value)) return std::nullopt;
    if (text.size() == 1) value *= 10;  // "9" as 9.0
  } else {
    if (!digits(text.substr(0, dot), major) || text.size() - dot - 1 != 1 ||
        !digits(text.substr(dot + 1), minor)) {
      return std::nullopt;
    }
    value = major * 10 + minor;
  }
  if (value < 30 || value > 199) return std::nullopt;
  return value;
}

ScopedBlasWorkspaces::ScopedBlasWorkspaces(int64_t bytes) {
  if (g_active != nullptr) throw std::logic_error("ScopedBlasWorkspaces: one at a time");
  g_active = new Workspaces();
  g_active->bytes = bytes;
  g_handle = at::addGlobalCallback(
      at::RecordFunctionCallback(&OnOperator).scopes({at::RecordScope::FUNCTION}));
}

ScopedBlasWorkspaces::~ScopedBlasWorkspaces() {
  at::removeCallback(g_handle);
  delete g_active;  // frees the workspaces, as the process's end frees a CUDA run's
  g_active = nullptr;
}

int ScopedBlasWorkspaces::Taken() const {
  std::lock_guard<std::mutex> lock(g_active->mutex);
  return g_active->taken;
}

}  // namespace memsweep::estimate
