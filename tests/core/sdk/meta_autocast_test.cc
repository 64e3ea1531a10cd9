// memsweep/autocast.h on the estimate's meta device: the lower-precision list on either target
// (matrix products in bf16), and, for an estimate standing for CUDA, CUDA autocast's fp32 lists —
// a bf16 tensor's softmax, sum or exp comes out in fp32, as on a GPU — which an estimate standing
// for the CPU (whose autocast lists lack them) leaves in bf16. Dtypes only: an estimate's bytes
// follow from them.
#include "memsweep/autocast.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "core/estimate/meta_attention.h"

namespace memsweep {
namespace {

struct Dtypes {
  c10::ScalarType mm, softmax, softmax_with_dtype, sum, exp, log_softmax;
};

Dtypes UnderMetaAutocast(c10::DeviceType target) {
  estimate::SetMetaTarget(target);
  const at::TensorOptions meta = at::TensorOptions().device(at::kMeta);
  const at::Tensor a = at::empty({8, 8}, meta), b = at::empty({8, 8}, meta);
  const at::Tensor half = at::empty({8, 8}, meta.dtype(at::kBFloat16));
  SetAutocast(c10::DeviceType::Meta, true, at::kBFloat16);
  const Dtypes d{at::mm(a, b).scalar_type(),
                 at::softmax(half, -1).scalar_type(),
                 at::softmax(half, -1, at::kBFloat16).scalar_type(),
                 half.sum().scalar_type(),
                 half.exp().scalar_type(),
                 at::log_softmax(half, -1).scalar_type()};
  SetAutocast(c10::DeviceType::Meta, false, at::kBFloat16);
  ClearAutocastCache();
  estimate::SetMetaTarget(c10::DeviceType::CPU);
  return d;
}

TEST(MetaAutocastTest, AnEstimateForCudaFollowsCudaAutocastsFp32Lists) {
  const Dtypes cuda = UnderMetaAutocast(c10::DeviceType::CUDA);
  EXPECT_EQ(cuda.mm, at::kBFloat16);
  EXPECT_EQ(cuda.softmax, at::kFloat);
  EXPECT_EQ(cuda.softmax_with_dtype, at::kBFloat16);  // the caller's dtype stands
  EXPECT_EQ(cuda.sum, at::kFloat);
  EXPECT_EQ(cuda.exp, at::kFloat);
  EXPECT_EQ(cuda.log_softmax, at::kFloat);
}

TEST(MetaAutocastTest, AnEstimateForTheCpuAppliesOnlyTheLowerPrecisionList) {
  const Dtypes cpu = UnderMetaAutocast(c10::DeviceType::CPU);
  EXPECT_EQ(cpu.mm, at::kBFloat16);
  EXPECT_EQ(cpu.softmax, at::kBFloat16);
  EXPECT_EQ(cpu.sum, at::kBFloat16);
  EXPECT_EQ(cpu.exp, at::kBFloat16);
}

// Off, nothing is cast on either target.
TEST(MetaAutocastTest, OffItCastsNothing) {
  estimate::SetMetaTarget(c10::DeviceType::CUDA);
  const at::TensorOptions meta = at::TensorOptions().device(at::kMeta);
  EXPECT_EQ(at::mm(at::empty({4, 4}, meta), at::empty({4, 4}, meta)).scalar_type(), at::kFloat);
  EXPECT_EQ(at::softmax(at::empty({4, 4}, meta.dtype(at::kBFloat16)), -1).scalar_type(),
            at::kBFloat16);
  estimate::SetMetaTarget(c10::DeviceType::CPU);
}

}  // namespace
}  // namespace memsweep
