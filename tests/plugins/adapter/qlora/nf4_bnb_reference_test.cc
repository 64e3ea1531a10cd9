// memsweep's NF4 against bitsandbytes' (its CPU backend; references made by
// bnb_reference/make_references.py, run by ctest as BnbReference.Nf4MatchesBitsandbytes): the
// NF4 levels and the dynamic map bit for bit, the 4-bit codes exactly, the second-level absmax
// and offset within fp32 rounding. The 8-bit absmax codes are the nearest of the dynamic map,
// as bitsandbytes' CUDA kernel picks them; its CPU backend looks them up in a 65536-bin table
// instead, which near a midpoint between two codes can give the farther one: every code that
// differs must be such a neighbour, with memsweep's the nearer. Where the absmax codes agree,
// the dequantised weights agree within fp32 rounding.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "adapter/qlora/nf4.h"
#include "core/model/safetensors.h"

namespace memsweep::plugins::adapter {
namespace {

at::Tensor Read(const model::SafetensorsSet& set, const std::string& name) {
  const auto* entry = set.Find(name);
  EXPECT_NE(entry, nullptr) << name;
  return set.Read(*entry).clone();
}

TEST(Nf4BnbReferenceTest, CodesAndValuesMatchBitsandbytes) {
  const char* dir = std::getenv("MEMSWEEP_BNB_REFERENCE_DIR");
  if (dir == nullptr) {
    GTEST_SKIP() << "needs MEMSWEEP_BNB_REFERENCE_DIR: ctest runs it through "
                    "BnbReference.Nf4MatchesBitsandbytes (tests/support/reference_test.sh), "
                    "which quantises with bitsandbytes";
  }
  const model::SafetensorsSet ref = model::OpenSafetensors(std::string(dir) + "/reference.safetensors");
  EXPECT_TRUE(at::equal(Read(ref, "nf4_levels"), at::tensor(Nf4Levels())));
  EXPECT_TRUE(at::equal(Read(ref, "dynamic_map"), at::tensor(DynamicMap())));
  const at::Tensor map = at::tensor(DynamicMap()).to(at::kDouble);
  int64_t absmax_codes = 0, lookup_neighbours = 0;
  for (const char* name : {"square", "wide", "ragged", "scaled"}) {
    SCOPED_TRACE(name);
    const at::Tensor w = Read(ref, std::string(name) + ".weight");
    const Nf4Weight q = QuantizeNf4(w);
    EXPECT_TRUE(at::equal(q.codes.to(at::kInt), Read(ref, std::string(name) + ".codes")));
    const at::Tensor scales = Read(ref, std::string(name) + ".absmax_scales");
    const at::Tensor offset = Read(ref, std::string(name) + ".offset");
    EXPECT_LE((q.offset - offset).abs().item<double>(), 1e-6 * offset.abs().item<double>());
    EXPECT_LE((q.absmax_scales - scales).abs().max().item<double>(),
              1e-6 * scales.abs().max().item<double>());
    // The 8-bit codes: equal, or bitsandbytes' lookup took the farther neighbour.
    const at::Tensor bnb_codes = Read(ref, std::string(name) + ".absmax_codes").to(at::kByte);
    const at::Tensor differ = q.absmax_codes.ne(bnb_codes);
    absmax_codes += q.absmax_codes.numel();
    lookup_neighbours += differ.sum().item<int64_t>();
    if (differ.any().item<bool>()) {
      const at::Tensor ours = q.absmax_codes.masked_select(differ).to(at::kLong);
      const at::Tensor theirs = bnb_codes.masked_select(differ).to(at::kLong);
      EXPECT_LE((ours - theirs).abs().max().item<int64_t>(), 1);
      // The value each code stands for: (absmax - offset) / its block's scale.
      const at::Tensor absmax = w.reshape({-1, 64}).abs().amax(1).to(at::kDouble);
      const at::Tensor block_scale =
          q.absmax_scales.to(at::kDouble).repeat_interleave(256).narrow(0, 0, absmax.numel());
      const at::Tensor target =
          ((absmax - q.offset.to(at::kDouble)) / block_scale).masked_select(differ);
      EXPECT_TRUE((map.index_select(0, ours) - target)
                      .abs()
                      .le((map.index_select(0, theirs) - target).abs())
                      .all()
                      .item<bool>());
    }
    // Dequantised weights, block by block where the absmax codes agree.
    const at::Tensor ours = DequantizeNf4(q, at::kFloat).reshape(-1);
    const at::Tensor theirs = Read(ref, std::string(name) + ".dequantized").reshape(-1);
    const int64_t n = ours.numel();
    const at::Tensor block_agrees = differ.logical_not().repeat_interleave(64).narrow(0, 0, n);
    const at::Tensor diff = (ours - theirs).abs().masked_select(block_agrees);
    EXPECT_LE(diff.max().item<double>(), 1e-6 * theirs.abs().max().item<double>());
  }
  std::printf("absmax codes: %lld of %lld differ from bitsandbytes' CPU lookup (its farther "
              "neighbour)\n",
              static_cast<long long>(lookup_neighbours), static_cast<long long>(absmax_codes));
}

}  // namespace
}  // namespace memsweep::plugins::adapter
