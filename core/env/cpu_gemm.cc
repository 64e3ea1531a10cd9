#include "core/env/cpu_gemm.h"

#include <ATen/ATen.h>
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/baddbmm_cpu_dispatch.h>
#include <ATen/ops/bmm_cpu_dispatch.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "core/env/environment.h"
#include "core/env/onednn_matmul.h"
#include "core/env/silent_warnings.h"

namespace memsweep::env {
namespace {

// Which paths are in force; read by the kernels below on every product.
std::atomic<bool> g_upcast_bf16{false};
std::atomic<bool> g_onednn_fp32{false};

// True when `path` is in force and every operand is of the dtype it serves.
bool Serves(const std::atomic<bool>& path, c10::ScalarType dtype,
            std::initializer_list<const at::Tensor*> operands) {
  if (!path.load(std::memory_order_relaxed)) return false;
  for (const at::Tensor* t : operands) {
    if (t->scalar_type() != dtype) return false;
  }
  return true;
}
bool Upcast(std::initializer_list<const at::Tensor*> operands) {
  return Serves(g_upcast_bf16, at::kBFloat16, operands);
}
bool Onednn(std::initializer_list<const at::Tensor*> operands) {
  return Serves(g_onednn_fp32, at::kFloat, operands);
}
at::Tensor Wide(const at::Tensor& t) { return t.to(at::kFloat); }
at::Tensor Narrow(const at::Tensor& t) { return t.to(at::kBFloat16); }

// The fp32 products of the path in force.
at::Tensor Fp32Mm(const at::Tensor& a, const at::Tensor& b) {
  return g_onednn_fp32 ? OnednnMm(a, b) : at::cpu::mm(a, b);
}
at::Tensor Fp32Bmm(const at::Tensor& a, const at::Tensor& b) {
  return g_onednn_fp32 ? OnednnBmm(a, b) : at::cpu::bmm(a, b);
}
at::Tensor Fp32Addmm(const at::Tensor& c, const at::Tensor& a, const at::Tensor& b,
                     const at::Scalar& beta, const at::Scalar& alpha) {
  return g_onednn_fp32 ? OnednnAddmm(c, a, b, beta, alpha) : at::cpu::addmm(c, a, b, beta, alpha);
}
at::Tensor Fp32Baddbmm(const at::Tensor& c, const at::Tensor& a, const at::Tensor& b,
                       const at::Scalar& beta, const at::Scalar& alpha) {
  return g_onednn_fp32 ? OnednnBaddbmm(c, a, b, beta, alpha)
                       : at::cpu::baddbmm(c, a, b, beta, alpha);
}

at::Tensor Mm(const at::Tensor& self, const at::Tensor& mat2) {
  if (Upcast({&self, &mat2})) return Narrow(Fp32Mm(Wide(self), Wide(mat2)));
  if (Onednn({&self, &mat2})) return OnednnMm(self, mat2);
  return at::cpu::mm(self, mat2);
}

at::Tensor Bmm(const at::Tensor& self, const at::Tensor& mat2) {
  if (Upcast({&self, &mat2})) return Narrow(Fp32Bmm(Wide(self), Wide(mat2)));
  if (Onednn({&self, &mat2})) return OnednnBmm(self, mat2);
  return at::cpu::bmm(self, mat2);
}

at::Tensor Addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                 const at::Scalar& beta, const at::Scalar& alpha) {
  if (Upcast({&self, &mat1, &mat2})) {
    return Narrow(Fp32Addmm(Wide(self), Wide(mat1), Wide(mat2), beta, alpha));
  }
  if (Onednn({&self, &mat1, &mat2})) return OnednnAddmm(self, mat1, mat2, beta, alpha);
  return at::cpu::addmm(self, mat1, mat2, beta, alpha);
}

at::Tensor Baddbmm(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                   const at::Scalar& beta, const at::Scalar& alpha) {
  if (Upcast({&self, &batch1, &batch2})) {
    return Narrow(Fp32Baddbmm(Wide(self), Wide(batch1), Wide(batch2), beta, alpha));
  }
  if (Onednn({&self, &batch1, &batch2})) return OnednnBaddbmm(self, batch1, batch2, beta, alpha);
  return at::cpu::baddbmm(self, batch1, batch2, beta, alpha);
}

// The out= forms (matmul's out variant and at::mm_out reach them): the same result, written into
// `out` (resized as LibTorch's kernels resize it).
at::Tensor& Into(at::Tensor& out, const at::Tensor& result) {
  out.resize_(result.sizes());
  return out.copy_(result);
}

at::Tensor& MmOut(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  if (Upcast({&self, &mat2, &out}) || Onednn({&self, &mat2, &out})) {
    return Into(out, Mm(self, mat2));
  }
  return at::cpu::mm_out(out, self, mat2);
}

at::Tensor& BmmOut(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  if (Upcast({&self, &mat2, &out}) || Onednn({&self, &mat2, &out})) {
    return Into(out, Bmm(self, mat2));
  }
  return at::cpu::bmm_out(out, self, mat2);
}

at::Tensor& AddmmOut(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                     const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  if (Upcast({&self, &mat1, &mat2, &out}) || Onednn({&self, &mat1, &mat2, &out})) {
    return Into(out, Addmm(self, mat1, mat2, beta, alpha));
  }
  return at::cpu::addmm_out(out, self, mat1, mat2, beta, alpha);
}

at::Tensor& BaddbmmOut(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                       const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  if (Upcast({&self, &batch1, &batch2, &out}) || Onednn({&self, &batch1, &batch2, &out})) {
    return Into(out, Baddbmm(self, batch1, batch2, beta, alpha));
  }
  return at::cpu::baddbmm_out(out, self, batch1, batch2, beta, alpha);
}

std::mutex g_mutex;
std::unique_ptr<torch::Library> g_library;  // alive while memsweep's kernels are registered

// Registers memsweep's kernels while either path needs them and removes them when neither does
// (LibTorch's kernels serve again). Called with g_mutex held.
void SyncRegistration() {
  const bool needed = g_upcast_bf16 || g_onednn_fp32;
  if (!needed) {
    g_library.reset();
    return;
  }
  if (g_library) return;
  const SilentWarnings quiet;  // registering over LibTorch's CPU kernels: the override is the point
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

// Whether ONEDNN_MAX_CPU_ISA (unset: no limit) lets oneDNN use an ISA whose name contains one of
// `markers` ("AMX"; "BF16" for AVX512_CORE_BF16 and above).
bool OnednnIsaAllows(std::initializer_list<const char*> markers) {
  const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
  const std::string limit = isa != nullptr ? isa : "";
  if (limit.empty() || limit == "ALL" || limit.rfind("AVX10", 0) == 0) return true;
  for (const char* marker : markers) {
    if (limit.find(marker) != std::string::npos) return true;
  }
  return false;
}

// True when a limit set in the environment (LibTorch's or oneDNN's) keeps kernels below AVX-512.
bool IsaLimitedBelowAvx512() {
  return at::get_cpu_capability() != "AVX512" || !OnednnIsaAllows({"AVX512", "AMX"});
}

}  // namespace

const char* Bf16GemmName(Bf16Gemm gemm) {
  return gemm == Bf16Gemm::kUpcast ? "upcast" : "native";
}


bool AmxBf16Usable() {
  return CpuHasFlag("amx_bf16") && OnednnIsaAllows({"AMX"});
}

bool NativeBf16Preferred() {
  if (AmxBf16Usable()) return true;
  return CpuVendor() != "GenuineIntel" && CpuHasFlag("avx512_bf16") &&
         OnednnIsaAllows({"BF16", "AMX"});
}

Bf16Gemm ChooseBf16Gemm(Bf16GemmSetting setting) {
  switch (setting) {
    case Bf16GemmSetting::kNative: return Bf16Gemm::kNative;
    case Bf16GemmSetting::kUpcast: return Bf16Gemm::kUpcast;
    case Bf16GemmSetting::kAuto: break;
  }
  return NativeBf16Preferred() ? Bf16Gemm::kNative : Bf16Gemm::kUpcast;
}

void UseBf16Gemm(Bf16Gemm gemm) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_upcast_bf16 = gemm == Bf16Gemm::kUpcast;
  SyncRegistration();
}

Bf16Gemm ActiveBf16Gemm() { return g_upcast_bf16 ? Bf16Gemm::kUpcast : Bf16Gemm::kNative; }

const char* Fp32GemmName(Fp32Gemm gemm) {
  return gemm == Fp32Gemm::kOnednn ? "onednn" : "native";
}

bool OnednnFp32Preferred() {
  return CpuVendor() != "GenuineIntel" && OnednnFp32Usable() && !IsaLimitedBelowAvx512();
}

Fp32Gemm ChooseFp32Gemm(Fp32GemmSetting setting) {
  switch (setting) {
    case Fp32GemmSetting::kNative: return Fp32Gemm::kNative;
    case Fp32GemmSetting::kOnednn: return Fp32Gemm::kOnednn;
    case Fp32GemmSetting::kAuto: break;
  }
  return OnednnFp32Preferred() ? Fp32Gemm::kOnednn : Fp32Gemm::kNative;
}

void UseFp32Gemm(Fp32Gemm gemm) {
  TORCH_CHECK(gemm == Fp32Gemm::kNative || OnednnFp32Usable(),
              "fp32 GEMM \"onednn\": oneDNN's fp32 matmul is not available here (it needs "
              "AVX-512 BW/VL/DQ or AVX-NE-CONVERT, with ONEDNN_MAX_CPU_ISA not below them); use "
              "\"native\"");
  std::lock_guard<std::mutex> lock(g_mutex);
  g_onednn_fp32 = gemm == Fp32Gemm::kOnednn;
  SyncRegistration();
}

Fp32Gemm ActiveFp32Gemm() { return g_onednn_fp32 ? Fp32Gemm::kOnednn : Fp32Gemm::kNative; }

}  // namespace memsweep::env
