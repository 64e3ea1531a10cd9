// What memsweep relies on in the LibTorch it is built against (the PyPI wheel torch==2.11.0):
// the version, one OpenMP runtime shared with ATen, the environment facts it records, and the
// GEMMs that now run on LibTorch's own MKL/oneDNN instead of memsweep's old sgemm_ forwarding.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <torch/version.h>

#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "core/env/environment.h"
#include "support/tolerances.h"

namespace memsweep::env {
namespace {

// Paths of the loaded shared objects whose file name starts with `prefix`.
std::set<std::string> LoadedLibraries(const std::string& prefix) {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> found;
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.rfind('/');
    if (slash == std::string::npos) continue;
    if (line.compare(slash + 1, prefix.size(), prefix) == 0) {
      found.insert(line.substr(line.find('/')));
    }
  }
  return found;
}

TEST(LibTorchPlatform, IsThePinnedVersion) {
  std::ifstream pinned(MEMSWEEP_SOURCE_DIR "/tools/torch-version");
  std::string wanted;
  pinned >> wanted;
  ASSERT_FALSE(wanted.empty());
  EXPECT_EQ(std::string(TORCH_VERSION).rfind(wanted, 0), 0u)
      << "built against " << TORCH_VERSION << ", tools/torch-version pins " << wanted;
  EXPECT_EQ(DescribeEnvironment().torch_version, TORCH_VERSION);
}

TEST(LibTorchPlatform, OneOpenMpRuntimeServesMemsweepAndAten) {
  // memsweep's -fopenmp objects and libtorch_cpu both need libgomp.so.1; the wheel carries its
  // own copy under torch/lib. Two runtimes would give at::parallel_for (inlined into memsweep's
  // kernels) a different thread pool than ATen's: exactly one may be loaded.
  const auto gomp = LoadedLibraries("libgomp");
  EXPECT_EQ(gomp.size(), 1u) << "OpenMP runtimes loaded: " << ::testing::PrintToString(gomp);
  const int before = at::get_num_threads();
  at::set_num_threads(2);
  EXPECT_EQ(omp_get_max_threads(), at::get_num_threads());
  // Work split by at::parallel_for inside memsweep's code sees ATen's thread numbering.
  std::atomic<int> max_thread{0};
  at::parallel_for(0, 1 << 16, 1, [&](int64_t, int64_t) {
    int seen = max_thread.load();
    const int me = at::get_thread_num();
    while (me > seen && !max_thread.compare_exchange_weak(seen, me)) {
    }
  });
  EXPECT_LT(max_thread.load(), at::get_num_threads());
  at::set_num_threads(before);
}

TEST(LibTorchPlatform, TheStandardLibraryIsTheSystemsNotLibtorchsCopy) {
  // The wheel's libraries export unversioned copies of newer libstdc++ parts; a program that
  // binds to them crashes in std::filesystem::remove_all (core/cmake/MemsweepTorch.cmake).
  using RemoveAll = std::uintmax_t (*)(const std::filesystem::path&);
  const RemoveAll fn = &std::filesystem::remove_all;
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(fn), &info), 0);
  EXPECT_NE(std::string(info.dli_fname).find("libstdc++"), std::string::npos) << info.dli_fname;
  const auto dir = std::filesystem::temp_directory_path() / "memsweep-remove-all-probe";
  std::filesystem::create_directories(dir / "a" / "b");
  EXPECT_EQ(std::filesystem::remove_all(dir), 3u);
}

TEST(LibTorchPlatform, EnvironmentNamesTheBuild) {
  const EnvironmentInfo info = DescribeEnvironment();
  EXPECT_FALSE(info.cpu_capability.empty());
  EXPECT_EQ(info.blas_kind, at::hasMKL() ? "mkl" : "unknown");
  const std::string line = VersionLine(info);
  EXPECT_NE(line.find(std::string("LibTorch ") + TORCH_VERSION), std::string::npos) << line;
  if (info.cuda_build) {
    EXPECT_EQ(info.cuda_runtime.rfind("13.", 0), 0u) << info.cuda_runtime;
    EXPECT_FALSE(info.cudnn_version.empty());
    EXPECT_FALSE(info.nccl_version.empty());
    EXPECT_NE(line.find("CUDA: built in (runtime " + info.cuda_runtime), std::string::npos) << line;
  } else {
    EXPECT_NE(line.find("CUDA: not built in"), std::string::npos) << line;
  }
}

TEST(LibTorchPlatform, Fp32MatmulMatchesAFloat64Reference) {
  // Odd sizes and transposed operands reach every layout case of the BLAS call. The bound is
  // the worst case of a k-term fp32 dot product, elementwise: γ_k·(|a|·|b|), u = 2^-24.
  const int64_t m = 67, k = 129, n = 45;
  const at::Tensor a = at::randn({m, k}), b = at::randn({k, n});
  const at::Tensor ref = at::mm(a.to(at::kDouble), b.to(at::kDouble));
  const at::Tensor bound = testing_support::ProductErrorBound(
      at::mm(a.to(at::kDouble).abs(), b.to(at::kDouble).abs()), ref, k,
      testing_support::kFp32Roundoff, /*u_out=*/0.0);
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      const at::Tensor aa = ta ? a.t().contiguous().t() : a;
      const at::Tensor bb = tb ? b.t().contiguous().t() : b;
      const double worst = testing_support::WorstRatio(at::mm(aa, bb), ref, bound);
      EXPECT_LE(worst, 1.0) << "transposed a: " << ta << ", b: " << tb;
    }
  }
}

}  // namespace
}  // namespace memsweep::env
