// EnvironmentInfo: what machine and libraries a run measured on, recorded with every result so
// that figures from different machines are never compared blindly.
//
//   EnvironmentInfo env = DescribeEnvironment();
//   std::cout << env.torch_version << (env.cuda_build ? " with CUDA " + env.cuda_runtime : "");
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>

namespace memsweep::env {

struct EnvironmentInfo {
  std::string hostname;
  std::string cpu_model;
  int cores = 0;            // cores this process may use
  int threads = 0;          // LibTorch intra-op threads in force
  std::string torch_version;    // LibTorch's version, e.g. "2.11.0"
  std::string cpu_capability;   // the ATen CPU kernels in use: "AVX512", "AVX2", "DEFAULT", ...
  std::string blas_library;     // the library holding LibTorch's sgemm_ (libtorch_cpu.so: MKL)
  std::string blas_kind;        // "mkl" when LibTorch was built with MKL, else "unknown"
  std::string bf16_gemm;        // CPU bf16 products: "native" or "upcast" (env/cpu_gemm.h)
  std::string fp32_gemm;        // CPU fp32 products: "native" or "onednn" (env/cpu_gemm.h)
  bool cuda_build = false;      // memsweep was built with LibTorch's CUDA libraries
  std::string cuda_runtime;     // CUDA runtime version of the build ("13.0"); empty without CUDA
  std::string cudnn_version;    // cuDNN version LibTorch reports ("9.19.0"); empty without
  std::string nccl_version;     // NCCL loaded with LibTorch ("2.28.9"); empty without
  // The GPU a CUDA run trained on (empty / 0 for a CPU run).
  std::string device;           // "cpu" or "cuda:N"
  std::string gpu_name;         // "NVIDIA H100 80GB HBM3"
  int64_t gpu_memory_bytes = 0;
  std::string compute_capability;  // "9.0"
  std::string cuda_driver;      // the driver's CUDA version ("13.0"), from cuDriverGetVersion
  std::string memsweep_version;
  std::string git_revision;
};

// The machine and libraries; with a CUDA device also that GPU (name, memory, capability, driver).
// The processor's model name from /proc/cpuinfo ("unknown" when it has none).
std::string CpuModelName();
// /proc/cpuinfo's vendor_id ("GenuineIntel", "AuthenticAMD"; "" when it has none).
std::string CpuVendor();
// Whether /proc/cpuinfo's flags list `flag` ("avx512bw", "amx_bf16", ...).
bool CpuHasFlag(const std::string& flag);

EnvironmentInfo DescribeEnvironment(const c10::Device& device = c10::Device(c10::kCPU));

// One line for `memsweep --version`: memsweep, LibTorch, CUDA build and its library versions.
std::string VersionLine(const EnvironmentInfo& info);

}  // namespace memsweep::env
