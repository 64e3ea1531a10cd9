// The CPU GEMM paths (core/env/cpu_gemm.h). bf16 upcast: exactly "widen, fp32 GEMM, round once"
// for every registered operator and its backward, LibTorch's own kernels back when it is
// removed, other dtypes untouched, and an error bound that follows from the arithmetic alone.
// fp32 oneDNN: every operator and its backward routed to oneDNN's product, bf16's upcast
// through it too, auto's rule, and a run that records its paths and leaves the process as it
// found it.
#include "core/env/cpu_gemm.h"

#include <ATen/ATen.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/env/environment.h"
#include "core/env/onednn_matmul.h"
#include "support/run_configs.h"
#include "support/scoped_env.h"
#include "support/tolerances.h"

namespace memsweep::env::bf16_gemm_test {
namespace {

// Where the dispatcher finds aten::<op>'s CPU kernel: LibTorch's registration, or cpu_gemm.cc's.
bool CpuKernelIsMemsweeps(const char* op, const char* overload = "") {
  const auto handle = c10::Dispatcher::singleton().findSchema({op, overload});
  if (!handle) return false;
  const std::string table = "\n" + handle->dumpComputedTable();
  const size_t cpu = table.find("\nCPU: ");
  return cpu != std::string::npos &&
         table.substr(cpu, table.find('\n', cpu + 1) - cpu).find("cpu_gemm.cc") !=
             std::string::npos;
}

at::Tensor Bf16(at::IntArrayRef sizes) { return at::randn(sizes).to(at::kBFloat16); }
at::Tensor Once(const at::Tensor& fp32) { return fp32.to(at::kBFloat16); }

// Sets ONEDNN_MAX_CPU_ISA for its lifetime, then puts back what was there.
class ScopedOnednnIsa : public testing_support::ScopedEnv {
 public:
  explicit ScopedOnednnIsa(const char* isa) : ScopedEnv("ONEDNN_MAX_CPU_ISA", isa) {}
};

class Bf16GemmTest : public ::testing::Test {
 protected:
  void SetUp() override { torch::manual_seed(7); }
  void TearDown() override { UseBf16Gemm(Bf16Gemm::kNative); }
};

class Fp32GemmTest : public ::testing::Test {
 protected:
  void SetUp() override { torch::manual_seed(5); }
  void TearDown() override {
    UseBf16Gemm(Bf16Gemm::kNative);
    UseFp32Gemm(Fp32Gemm::kNative);
  }
};

#define SKIP_WITHOUT_ONEDNN()                                                            \
  if (!OnednnFp32Usable()) {                                                             \
    GTEST_SKIP() << "oneDNN's fp32 matmul is not available here (AVX-512 BW/VL/DQ or " \
                    "AVX-NE-CONVERT needed; ONEDNN_MAX_CPU_ISA may rule them out)";                           \
  }

TEST_F(Fp32GemmTest, OnednnServesEveryFp32OperatorAndItsBackwardAndBf16UpcastGoesThroughIt) {
  SKIP_WITHOUT_ONEDNN();
  // Shapes above kOnednnSmallestProduct, where oneDNN computes.
  const at::Tensor a = at::randn({256, 320}), b = at::randn({320, 256}), c = at::randn({256, 256});
  const at::Tensor ba = at::randn({3, 256, 320}), bb = at::randn({3, 320, 256});
  const at::Tensor bc = at::randn({3, 256, 256});
  UseFp32Gemm(Fp32Gemm::kOnednn);
  ASSERT_EQ(ActiveFp32Gemm(), Fp32Gemm::kOnednn);
  for (const char* op : {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}) {
    EXPECT_TRUE(CpuKernelIsMemsweeps(op)) << op;
    EXPECT_TRUE(CpuKernelIsMemsweeps(op, "out")) << op << ".out";
  }
  EXPECT_TRUE(at::equal(at::mm(a, b), OnednnMm(a, b)));
  EXPECT_TRUE(at::equal(at::addmm(c, a, b, 0.5, 2.0), OnednnAddmm(c, a, b, 0.5, 2.0)));
  EXPECT_TRUE(at::equal(at::bmm(ba, bb), OnednnBmm(ba, bb)));
  EXPECT_TRUE(at::equal(at::baddbmm(bc, ba, bb), OnednnBaddbmm(bc, ba, bb, 1.0, 1.0)));
  at::Tensor out = at::empty({0});
  at::mm_out(out, a, b);
  EXPECT_TRUE(at::equal(out, OnednnMm(a, b)));
  // linear forward and backward (autograd sits above the CPU key).
  const at::Tensor x = at::randn({256, 320}).requires_grad_(), w = at::randn({256, 320});
  const at::Tensor grad = at::randn({256, 256});
  const at::Tensor y = at::linear(x, w);
  EXPECT_TRUE(at::equal(y, OnednnMm(x.detach(), w.t())));
  y.backward(grad);
  EXPECT_TRUE(at::equal(x.grad(), OnednnMm(grad, w)));
  // bf16 upcast multiplies through oneDNN; float64 stays with LibTorch.
  UseBf16Gemm(Bf16Gemm::kUpcast);
  const at::Tensor a16 = Bf16({256, 320}), b16 = Bf16({320, 256});
  EXPECT_TRUE(at::equal(at::mm(a16, b16), Once(OnednnMm(a16.to(at::kFloat), b16.to(at::kFloat)))));
  const at::Tensor a64 = a.to(at::kDouble), b64 = b.to(at::kDouble);
  EXPECT_TRUE(at::equal(at::mm(a64, b64), at::cpu::mm(a64, b64)));
}

TEST_F(Fp32GemmTest, NativeRestoresLibTorchsKernelsOnlyWhenNeitherPathNeedsMemsweeps) {
  SKIP_WITHOUT_ONEDNN();
  const at::Tensor a = at::randn({256, 320}), b = at::randn({320, 256});
  UseFp32Gemm(Fp32Gemm::kOnednn);
  UseBf16Gemm(Bf16Gemm::kUpcast);
  UseFp32Gemm(Fp32Gemm::kNative);
  EXPECT_TRUE(CpuKernelIsMemsweeps("aten::mm"));  // still there for bf16
  EXPECT_TRUE(at::equal(at::mm(a, b), at::cpu::mm(a, b)));
  UseBf16Gemm(Bf16Gemm::kNative);
  EXPECT_FALSE(CpuKernelIsMemsweeps("aten::mm"));
  UseFp32Gemm(Fp32Gemm::kOnednn);
  UseFp32Gemm(Fp32Gemm::kOnednn);  // idempotent
  EXPECT_TRUE(at::equal(at::mm(a, b), OnednnMm(a, b)));
}

TEST_F(Fp32GemmTest, AutoIsOnednnOffIntelWhereAvx512IsAllowedAndTheRunRecordsIt) {
  EXPECT_EQ(ChooseFp32Gemm(Fp32GemmSetting::kNative), Fp32Gemm::kNative);
  EXPECT_EQ(ChooseFp32Gemm(Fp32GemmSetting::kAuto),
            OnednnFp32Preferred() ? Fp32Gemm::kOnednn : Fp32Gemm::kNative);
  if (CpuVendor() == "GenuineIntel" || !OnednnFp32Usable()) EXPECT_FALSE(OnednnFp32Preferred());
  // Limiting oneDNN below AVX-512 (as tools/test-as-avx2 does) turns auto to native.
  {
    const ScopedOnednnIsa avx2("AVX2");
    EXPECT_FALSE(OnednnFp32Preferred());
  }
  std::vector<std::string> paths = {"native"};
  if (OnednnFp32Usable()) paths.push_back("onednn");
  for (const std::string& gemm : paths) {
    const train::RunResult r = testing_support::Train(
        testing_support::TinyRun(1, {"device.fp32_gemm=\"" + gemm + "\""}));
    ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
    EXPECT_EQ(r.environment.fp32_gemm, gemm);
    EXPECT_EQ(ActiveFp32Gemm(), Fp32Gemm::kNative) << "the run left its path in force";
  }
}

TEST_F(Bf16GemmTest, UpcastIsWidenMultiplyInFp32AndRoundOnceForEveryOperator) {
  const at::Tensor a = Bf16({64, 96}), b = Bf16({96, 80}), bias = Bf16({64, 80});
  const at::Tensor ba = Bf16({3, 64, 96}), bb = Bf16({3, 96, 80}), bbias = Bf16({3, 64, 80});
  UseBf16Gemm(Bf16Gemm::kUpcast);
  ASSERT_EQ(ActiveBf16Gemm(), Bf16Gemm::kUpcast);
  for (const char* op : {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}) {
    EXPECT_TRUE(CpuKernelIsMemsweeps(op)) << op;
    EXPECT_TRUE(CpuKernelIsMemsweeps(op, "out")) << op << ".out";
  }
  const auto f = [](const at::Tensor& t) { return t.to(at::kFloat); };
  EXPECT_TRUE(at::equal(at::mm(a, b), Once(at::mm(f(a), f(b)))));
  EXPECT_TRUE(at::equal(at::addmm(bias, a, b, 0.5, 2.0), Once(at::addmm(f(bias), f(a), f(b), 0.5, 2.0))));
  EXPECT_TRUE(at::equal(at::bmm(ba, bb), Once(at::bmm(f(ba), f(bb)))));
  EXPECT_TRUE(at::equal(at::baddbmm(bbias, ba, bb), Once(at::baddbmm(f(bbias), f(ba), f(bb)))));
  // Transposed (non-contiguous) operands, as linear's backward passes them.
  EXPECT_TRUE(at::equal(at::mm(a.t(), bias), Once(at::mm(f(a).t(), f(bias)))));
  // The out= forms, as at::mm_out and matmul's out variant reach them.
  at::Tensor out = at::empty({0}, a.options());
  at::mm_out(out, a, b);
  EXPECT_TRUE(at::equal(out, Once(at::mm(f(a), f(b)))));
  at::Tensor bout = at::empty({0}, a.options());
  at::baddbmm_out(bout, bbias, ba, bb);
  EXPECT_TRUE(at::equal(bout, Once(at::baddbmm(f(bbias), f(ba), f(bb)))));
  // linear reaches addmm/mm; its result is the same rounding of the fp32 product.
  const at::Tensor w = Bf16({80, 96});
  EXPECT_TRUE(at::equal(at::linear(a, w), Once(at::mm(f(a), f(w).t()))));
}

TEST_F(Bf16GemmTest, BackwardProductsTakeTheSamePath) {
  UseBf16Gemm(Bf16Gemm::kUpcast);
  const at::Tensor a = Bf16({32, 48}).requires_grad_(), b = Bf16({48, 16});
  const at::Tensor grad = Bf16({32, 16});
  at::mm(a, b).backward(grad);
  const at::Tensor expected = Once(at::mm(grad.to(at::kFloat), b.to(at::kFloat).t()));
  EXPECT_TRUE(at::equal(a.grad(), expected));
}

TEST_F(Bf16GemmTest, NativeRestoresLibTorchsKernelsAndOtherDtypesAreUntouched) {
  const at::Tensor a = Bf16({64, 96}), b = Bf16({96, 80});
  const at::Tensor x = at::randn({64, 96}), y = at::randn({96, 80});
  UseBf16Gemm(Bf16Gemm::kUpcast);
  EXPECT_TRUE(at::equal(at::mm(x, y), at::cpu::mm(x, y)));  // fp32 goes straight through
  UseBf16Gemm(Bf16Gemm::kNative);
  EXPECT_EQ(ActiveBf16Gemm(), Bf16Gemm::kNative);
  EXPECT_FALSE(CpuKernelIsMemsweeps("aten::mm"));
  EXPECT_TRUE(at::equal(at::mm(a, b), at::cpu::mm(a, b)));
  UseBf16Gemm(Bf16Gemm::kUpcast);  // and back again
  UseBf16Gemm(Bf16Gemm::kUpcast);  // idempotent
  EXPECT_TRUE(at::equal(at::mm(a, b), Once(at::mm(a.to(at::kFloat), b.to(at::kFloat)))));
}

// Against a float64 reference of the same bf16 inputs: the fp32 sum of k products is off by at
// most γ_k·Σ|a||b| (u32 = 2^-24), and the one rounding to bf16 adds at most u_bf16 = 2^-8 of the
// result (support/tolerances.h, ProductErrorBound). The bound holds on any CPU: it does not
// depend on the kernel's blocking. It holds for the path `auto` picks here as well (native,
// oneDNN's fp32-accumulating bf16 GEMM, with AMX or a non-Intel AVX512-BF16; upcast elsewhere).
TEST_F(Bf16GemmTest, UpcastErrorStaysWithinTheArithmeticBound) {
  const int64_t k = 512;
  const at::Tensor a = Bf16({128, k}), b = Bf16({k, 64});
  const at::Tensor exact = at::mm(a.to(at::kDouble), b.to(at::kDouble));
  const at::Tensor magnitude = at::mm(a.to(at::kDouble).abs(), b.to(at::kDouble).abs());
  const at::Tensor bound = testing_support::ProductErrorBound(
      magnitude, exact, k, testing_support::kFp32Roundoff, testing_support::kBf16Roundoff);
  for (const Bf16Gemm gemm : {Bf16Gemm::kUpcast, ChooseBf16Gemm(Bf16GemmSetting::kAuto)}) {
    UseBf16Gemm(gemm);
    const at::Tensor error = (at::mm(a, b).to(at::kDouble) - exact).abs();
    EXPECT_TRUE((error <= bound).all().item<bool>())
        << Bf16GemmName(gemm) << ": worst excess " << (error - bound).max().item<double>();
  }
}

TEST_F(Bf16GemmTest, AutoIsNativeWhereAmxOrAvx512Bf16OffIntelAndTheRunRecordsThePath) {
  EXPECT_EQ(ChooseBf16Gemm(Bf16GemmSetting::kAuto),
            NativeBf16Preferred() ? Bf16Gemm::kNative : Bf16Gemm::kUpcast);
  if (std::getenv("ONEDNN_MAX_CPU_ISA") == nullptr) {  // no limit: the CPU's flags decide
    EXPECT_EQ(NativeBf16Preferred(),
              AmxBf16Usable() || (CpuVendor() != "GenuineIntel" && CpuHasFlag("avx512_bf16")));
  }
  {
    const ScopedOnednnIsa avx2("AVX2");  // as tools/test-as-avx2 runs: no native bf16
    EXPECT_FALSE(NativeBf16Preferred());
    EXPECT_EQ(ChooseBf16Gemm(Bf16GemmSetting::kAuto), Bf16Gemm::kUpcast);
  }
  {
    const ScopedOnednnIsa bf16("AVX512_CORE_BF16");  // AVX512-BF16 allowed, AMX not
    EXPECT_FALSE(AmxBf16Usable());
    EXPECT_EQ(NativeBf16Preferred(), CpuVendor() != "GenuineIntel" && CpuHasFlag("avx512_bf16"));
  }
  EXPECT_EQ(ChooseBf16Gemm(Bf16GemmSetting::kNative), Bf16Gemm::kNative);
  EXPECT_EQ(ChooseBf16Gemm(Bf16GemmSetting::kUpcast), Bf16Gemm::kUpcast);
  for (const char* gemm : {"native", "upcast"}) {
    const train::RunResult r = testing_support::Train(testing_support::TinyRun(
        2, {"strategies.precision.plugin=\"bf16-autocast\"",
            std::string("device.gemm=\"") + gemm + "\""}));
    ASSERT_EQ(r.status, train::RunStatus::kOk) << r.error;
    EXPECT_EQ(r.environment.bf16_gemm, gemm);
  }
  // An fp32 run takes the chosen path too: a frozen bf16 base (LoRA's base_dtype, QLoRA's
  // products) makes bf16 products in it, which LibTorch's generic kernel ran ~100x slower on an
  // AVX2 CPU. fp32 products are the same on either path.
  const train::RunResult fp32 = testing_support::Train(testing_support::TinyRun(2));
  EXPECT_EQ(fp32.environment.bf16_gemm, Bf16GemmName(ChooseBf16Gemm(Bf16GemmSetting::kAuto)));
  for (const char* gemm : {"native", "upcast"}) {
    const train::RunResult lora = testing_support::Train(testing_support::TinyRun(
        2, {"strategies.adapter.plugin=\"lora\"", "strategies.adapter.base_dtype=\"bf16\"",
            std::string("device.gemm=\"") + gemm + "\""}));
    ASSERT_EQ(lora.status, train::RunStatus::kOk) << lora.error;
    EXPECT_EQ(lora.environment.bf16_gemm, gemm);
    const train::RunResult plain = testing_support::Train(
        testing_support::TinyRun(2, {std::string("device.gemm=\"") + gemm + "\""}));
    EXPECT_EQ(testing_support::Losses(plain), testing_support::Losses(fp32)) << gemm;
  }
}

}  // namespace
}  // namespace memsweep::env::bf16_gemm_test
