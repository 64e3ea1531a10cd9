#include "core/env/bf16_gemm.h"

#include <ATen/ATen.h>
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/baddbmm_cpu_dispatch.h>
#include <ATen/ops/bmm_cpu_dispatch.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <memory>
#include <mutex>

namespace memsweep::env {
namespace {

bool Bf16(const at::Tensor& t) { return t.scalar_type() == at::kBFloat16; }
at::Tensor Wide(const at::Tensor& t) { return t.to(at::kFloat); }
at::Tensor Narrow(const at::Tensor& t) { return t.to(at::kBFloat16); }

at::Tensor Mm(const at::Tensor& self, const at::Tensor& mat2) {
  if (Bf16(self) && Bf16(mat2)) return Narrow(at::cpu::mm(Wide(self), Wide(mat2)));
  return at::cpu::mm(self, mat2);
}

at::Tensor Bmm(const at::Tensor& self, const at::Tensor& mat2) {
  if (Bf16(self) && Bf16(mat2)) return Narrow(at::cpu::bmm(Wide(self), Wide(mat2)));
  return at::cpu::bmm(self, mat2);
}

at::Tensor Addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                 const at::Scalar& beta, const at::Scalar& alpha) {
  if (Bf16(self) && Bf16(mat1) && Bf16(mat2)) {
    return Narrow(at::cpu::addmm(Wide(self), Wide(mat1), Wide(mat2), beta, alpha));
  }
  return at::cpu::addmm(self, mat1, mat2, beta, alpha);
}

at::Tensor Baddbmm(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                   const at::Scalar& beta, const at::Scalar& alpha) {
  if (Bf16(self) && Bf16(batch1) && Bf16(batch2)) {
    return Narrow(at::cpu::baddbmm(Wide(self), Wide(batch1), Wide(batch2), beta, alpha));
  }
  return at::cpu::baddbmm(self, batch1, batch2, beta, alpha);
}

// The out= forms (matmul's out variant and at::mm_out reach them): the same result, written into
// `out` (resized as LibTorch's kernels resize it).
at::Tensor& Into(at::Tensor& out, const at::Tensor& result) {
  out.resize_(result.sizes());
  return out.copy_(result);
}

at::Tensor& MmOut(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  if (Bf16(self) && Bf16(mat2) && Bf16(out)) return Into(out, Mm(self, mat2));
  return at::cpu::mm_out(out, self, mat2);
}

at::Tensor& BmmOut(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  if (Bf16(self) && Bf16(mat2) && Bf16(out)) return Into(out, Bmm(self, mat2));
  return at::cpu::bmm_out(out, self, mat2);
}

at::Tensor& AddmmOut(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                     const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  if (Bf16(self) && Bf16(mat1) && Bf16(mat2) && Bf16(out)) {
    return Into(out, Addmm(self, mat1, mat2, beta, alpha));
  }
  return at::cpu::addmm_out(out, self, mat1, mat2, beta, alpha);
}

at::Tensor& BaddbmmOut(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                       const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  if (Bf16(self) && Bf16(batch1) && Bf16(batch2) && Bf16(out)) {
    return Into(out, Baddbmm(self, batch1, batch2, beta, alpha));
  }
  return at::cpu::baddbmm_out(out, self, batch1, batch2, beta, alpha);
}

// Registering over LibTorch's CPU kernels makes the dispatcher warn once per operator; the
// override is the point here, so those warnings are not shown.
class SilentWarnings final : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};

std::mutex g_mutex;
std::unique_ptr<torch::Library> g_library;  // alive while the upcast kernels are registered

}  // namespace

const char* Bf16GemmName(Bf16Gemm gemm) {
  return gemm == Bf16Gemm::kUpcast ? "upcast" : "native";
}

bool AmxBf16Usable() {
  static const bool usable = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    bool amx = false;
    while (std::getline(cpuinfo, line)) {
      if (line.rfind("flags", 0) == 0) {
        amx = line.find(" amx_bf16") != std::string::npos;
        break;
      }
    }
    // oneDNN limited below AMX (ONEDNN_MAX_CPU_ISA=AVX2, AVX512_CORE_BF16, ...) cannot use it.
    const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
    const std::string limit = isa != nullptr ? isa : "";
    return amx && (limit.empty() || limit == "ALL" || limit.find("AMX") != std::string::npos);
  }();
  return usable;
}

Bf16Gemm ChooseBf16Gemm(Bf16GemmSetting setting) {
  switch (setting) {
    case Bf16GemmSetting::kNative: return Bf16Gemm::kNative;
    case Bf16GemmSetting::kUpcast: return Bf16Gemm::kUpcast;
    case Bf16GemmSetting::kAuto: break;
  }
  return AmxBf16Usable() ? Bf16Gemm::kNative : Bf16Gemm::kUpcast;
}

void UseBf16Gemm(Bf16Gemm gemm) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (gemm == Bf16Gemm::kNative) {
    g_library.reset();  // deregisters: LibTorch's kernels serve again
    return;
  }
  if (g_library) return;
  SilentWarnings silent;
  c10::WarningUtils::WarningHandlerGuard guard(&silent);
  auto library = std::make_unique<torch::Library>(torch::Library::IMPL, "aten",
                                                  c10::DispatchKey::CPU, __FILE__, __LINE__);
  library->impl("mm", TORCH_FN(Mm));
  library->impl("bmm", TORCH_FN(Bmm));
  library->impl("addmm", TORCH_FN(Addmm));
  library->impl("baddbmm", TORCH_FN(Baddbmm));
  library->impl("mm.out", TORCH_FN(MmOut));
  library->impl("bmm.out", TORCH_FN(BmmOut));
  library->impl("addmm.out", TORCH_FN(AddmmOut));
  library->impl("baddbmm.out", TORCH_FN(BaddbmmOut));
  g_library = std::move(library);
}

Bf16Gemm ActiveBf16Gemm() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_library ? Bf16Gemm::kUpcast : Bf16Gemm::kNative;
}

}  // namespace memsweep::env
