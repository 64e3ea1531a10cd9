// EnvironmentInfo: what machine and libraries a run measured on, recorded with every result so
// that figures from different machines are never compared blindly.
//
//   EnvironmentInfo env = DescribeEnvironment();
//   if (env.blas_kind == "reference") spdlog::warn(...);
#pragma once

#include <string>

namespace memsweep::env {

struct EnvironmentInfo {
  std::string hostname;
  std::string cpu_model;
  int cores = 0;            // cores this process may use
  int threads = 0;          // LibTorch intra-op threads in force
  std::string torch_version;
  std::string blas_library;  // resolved path of the libblas.so.3 behind sgemm_
  std::string blas_kind;     // "openblas-openmp", "openblas-pthread", "reference", ... or "unknown"
  std::string gemm_backend;  // what memsweep's sgemm_ forwards to: "onednn" or "blas"
  std::string memsweep_version;
  std::string git_revision;
};

EnvironmentInfo DescribeEnvironment();

// True when fp32 GEMM would run on Debian's reference BLAS (30-100x slower than optimized).
bool IsReferenceBlas(const EnvironmentInfo& info);

}  // namespace memsweep::env
