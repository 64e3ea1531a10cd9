#include "core/env/gemm_backend.h"

#include <ATen/ATen.h>
#include <dlfcn.h>
#include <dnnl.h>

#include <atomic>
#include <stdexcept>

namespace memsweep::env {
namespace {

using SgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*,
                         const float*, const float*, const int*, const float*, const int*,
                         const float*, float*, const int*);

std::atomic<GemmBackend> g_backend{GemmBackend::kOneDnn};
std::atomic<int64_t> g_calls{0};

SgemmFn SystemSgemm() {
  // The next definition of sgemm_ after libmemsweep in the lookup order: libblas.so.3's.
  static SgemmFn fn = reinterpret_cast<SgemmFn>(dlsym(RTLD_NEXT, "sgemm_"));
  return fn;
}

}  // namespace

void SetGemmBackend(GemmBackend backend) { g_backend.store(backend); }
GemmBackend ActiveGemmBackend() { return g_backend.load(); }

std::string GemmBackendName(GemmBackend backend) {
  return backend == GemmBackend::kOneDnn ? "onednn" : "blas";
}

std::optional<GemmBackend> ParseGemmBackend(std::string_view name) {
  if (name == "onednn") return GemmBackend::kOneDnn;
  if (name == "blas") return GemmBackend::kSystemBlas;
  return std::nullopt;
}

int64_t GemmShimCalls() { return g_calls.load(); }

bool GemmShimActive() {
  const int64_t before = GemmShimCalls();
  at::Tensor a = at::ones({64, 64});
  at::Tensor c = at::mm(a, a);
  (void)c;
  return GemmShimCalls() > before;
}

}  // namespace memsweep::env

// Column-major BLAS C = alpha·op(A)·op(B) + beta·C. dnnl_sgemm is row-major: a column-major
// matrix read row-major is its transpose, so compute Cᵀ = op(B)ᵀ·op(A)ᵀ by swapping operands.
extern "C" __attribute__((visibility("default"))) void sgemm_(
    const char* transa, const char* transb, const int* m, const int* n, const int* k,
    const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
    const float* beta, float* c, const int* ldc) {
  using memsweep::env::GemmBackend;
  memsweep::env::g_calls.fetch_add(1, std::memory_order_relaxed);
  if (memsweep::env::g_backend.load(std::memory_order_relaxed) == GemmBackend::kSystemBlas) {
    auto fn = memsweep::env::SystemSgemm();
    if (fn == nullptr) throw std::runtime_error("memsweep: no system sgemm_ to forward to");
    fn(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const dnnl_status_t status = dnnl_sgemm(*transb, *transa, *n, *m, *k, *alpha, b, *ldb, a, *lda,
                                          *beta, c, *ldc);
  if (status != dnnl_success) {
    throw std::runtime_error("memsweep: dnnl_sgemm failed with status " +
                             std::to_string(static_cast<int>(status)));
  }
}
