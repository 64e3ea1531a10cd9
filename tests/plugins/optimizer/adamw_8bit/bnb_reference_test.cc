// optimizer/adamw_8bit and adamw_32bit against bitsandbytes 0.50.2 on its CPU backend (references
// made by bnb_reference/make_references.py, run by ctest as BnbAdamWReference.MatchesBitsandbytes):
// the dynamic maps, blockwise quantisation and dequantisation, and six steps of AdamW8bit and
// AdamW32bit — every code, absmax value, moment and parameter bit for bit. The device form (what
// runs on CUDA, here on the CPU in 1,024-element chunks) against the same steps: 32 bits bit for
// bit; 8 bits within the bounds its one difference (a table bin computed with two roundings, not
// one fused multiply-add) allows.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/model/safetensors.h"
#include "optimizer/adamw_8bit/blockwise_quant.h"
#include "optimizer/adamw_8bit/bnb_adamw.h"
#include "optimizer/adamw_8bit/bnb_update.h"
#include "support/optimizer_steps.h"

namespace memsweep::adamw_8bit_reference_test {
namespace {

using namespace plugins::optimizer;

const char* const kNames[] = {"small", "exact", "ragged", "wide"};
constexpr int kSteps = 6;

struct Reference {
  model::SafetensorsSet set;
  at::Tensor operator()(const std::string& name) const {
    const auto* entry = set.Find(name);
    EXPECT_NE(entry, nullptr) << name;
    if (entry == nullptr) return at::Tensor();
    return set.Read(*entry).clone();
  }
  bool Has(const std::string& name) const { return set.Find(name) != nullptr; }
};

const Reference* Open() {
  static const char* dir = std::getenv("MEMSWEEP_BNB_ADAMW_REFERENCE_DIR");
  if (dir == nullptr) return nullptr;
  static const Reference ref{model::OpenSafetensors(std::string(dir) + "/reference.safetensors")};
  return &ref;
}

#define ADAMW_BNB_SKIP_WITHOUT_REFERENCES(ref)                                         \
  const Reference* ref = Open();                                                      \
  if (ref == nullptr) {                                                               \
    GTEST_SKIP() << "needs MEMSWEEP_BNB_ADAMW_REFERENCE_DIR: ctest runs it through "  \
                    "BnbAdamWReference.MatchesBitsandbytes "                          \
                    "(tests/support/reference_test.sh), which runs bitsandbytes";     \
  }

at::Tensor Codes(const at::Tensor& t) { return t.reshape({-1}).to(at::kInt); }

TEST(BnbAdamWReferenceTest, DynamicMapsEqualBitsandbytes) {
  ADAMW_BNB_SKIP_WITHOUT_REFERENCES(ref);
  EXPECT_TRUE(at::equal((*ref)("map.signed"), at::tensor(BlockwiseCode::Get(true).map)));
  EXPECT_TRUE(at::equal((*ref)("map.unsigned"), at::tensor(BlockwiseCode::Get(false).map)));
}

TEST(BnbAdamWReferenceTest, BlockwiseCodesEqualBitsandbytes) {
  ADAMW_BNB_SKIP_WITHOUT_REFERENCES(ref);
  for (const char* name : {"one_block", "ragged", "many"}) {
    for (const bool is_signed : {true, false}) {
      const std::string key =
          std::string("quant.") + name + (is_signed ? ".signed" : ".unsigned");
      SCOPED_TRACE(key);
      const at::Tensor values = (*ref)(key + ".values");
      const int64_t n = values.numel();
      at::Tensor absmax = at::empty({BnbBlocks(n)}, at::kFloat);
      at::Tensor codes = at::empty({n}, at::kByte);
      const BlockwiseCode& code = BlockwiseCode::Get(is_signed);
      QuantizeBlockwise(values.data_ptr<float>(), n, code, absmax.data_ptr<float>(),
                        codes.data_ptr<uint8_t>());
      EXPECT_TRUE(at::equal(Codes(codes), (*ref)(key + ".codes")));
      EXPECT_TRUE(at::equal(absmax, (*ref)(key + ".absmax")));
      at::Tensor back = at::empty({n}, at::kFloat);
      DequantizeBlockwise(codes.data_ptr<uint8_t>(), absmax.data_ptr<float>(), code,
                          back.data_ptr<float>(), n);
      EXPECT_TRUE(at::equal(back, (*ref)(key + ".dequantized")));
      // The device form's table lookup: the same codes but for a neighbour now and then.
      at::Tensor device_codes = at::empty({n}, at::kByte), device_absmax = at::empty_like(absmax);
      DeviceQuantize(values, at::tensor(code.lut), device_codes, device_absmax);
      EXPECT_TRUE(at::equal(device_absmax, absmax));
      const at::Tensor differ = device_codes.ne(codes);
      EXPECT_LE((Codes(device_codes) - Codes(codes)).abs().max().item<int>(), 1);
      std::printf("%s: %lld of %lld device-form codes are a neighbour\n", key.c_str(),
                  static_cast<long long>(differ.sum().item<int64_t>()),
                  static_cast<long long>(n));
      EXPECT_TRUE(at::equal(DeviceDequantize(codes, absmax, at::tensor(code.map)), back));
    }
  }
}

BnbHyper Hyper(int64_t step) { return BnbHyper{1e-2, 0.9, 0.999, 1e-8, 0.1, step}; }

OptimizerStepSpec Spec(int64_t step) { return testing_support::OptimizerTestSpec(step); }

// The optimizer (its CPU form) through six steps: every value bit for bit.
void ExpectStepsEqualBitsandbytes(const Reference& ref, int bits) {
  std::vector<at::Tensor> tensors;
  for (const char* name : kNames) {
    at::Tensor p = ref(std::string("init.") + name);
    p.set_requires_grad(true);
    tensors.push_back(p);
  }
  BnbAdamWOptions options;
  options.bits = bits;
  BnbAdamW optimizer(tensors, options);
  const std::string tag = bits == 8 ? "8bit" : "32bit";
  for (int step = 0; step < kSteps; ++step) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      tensors[i].mutable_grad() = ref("grad." + std::to_string(step) + "." + kNames[i]);
    }
    optimizer.Step(Spec(step + 1));
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::string key = tag + "." + std::to_string(step) + "." + kNames[i];
      SCOPED_TRACE(key);
      const BnbAdamW::State& s = optimizer.StateOf(i);
      EXPECT_TRUE(at::equal(tensors[i].detach(), ref(key + ".param")));
      EXPECT_EQ(s.EightBit(), ref.Has(key + ".absmax1"));
      if (s.EightBit()) {
        EXPECT_TRUE(at::equal(Codes(s.state1), ref(key + ".state1")));
        EXPECT_TRUE(at::equal(Codes(s.state2), ref(key + ".state2")));
        EXPECT_TRUE(at::equal(s.absmax1, ref(key + ".absmax1")));
        EXPECT_TRUE(at::equal(s.absmax2, ref(key + ".absmax2")));
      } else {
        EXPECT_TRUE(at::equal(s.state1, ref(key + ".state1")));
        EXPECT_TRUE(at::equal(s.state2, ref(key + ".state2")));
      }
    }
  }
}

TEST(BnbAdamWReferenceTest, AdamW8bitStepsEqualBitsandbytes) {
  ADAMW_BNB_SKIP_WITHOUT_REFERENCES(ref);
  ExpectStepsEqualBitsandbytes(*ref, 8);
}

TEST(BnbAdamWReferenceTest, AdamW32bitStepsEqualBitsandbytes) {
  ADAMW_BNB_SKIP_WITHOUT_REFERENCES(ref);
  ExpectStepsEqualBitsandbytes(*ref, 32);
}

// The device form in 1,024-element chunks on CPU tensors, from bitsandbytes' own state before
// each step (so that a neighbour code does not carry over): 32 bits bit for bit; 8 bits with
// codes equal but for neighbours, and parameters within a few fp32 roundings of the step.
TEST(BnbAdamWReferenceTest, DeviceFormStepsFollowBitsandbytes) {
  ADAMW_BNB_SKIP_WITHOUT_REFERENCES(ref);
  constexpr int64_t kChunk = 1024;
  const BlockwiseCode& sc = BlockwiseCode::Get(true);
  const BlockwiseCode& uc = BlockwiseCode::Get(false);
  const DeviceCodes codes{at::tensor(sc.map), at::tensor(sc.lut), at::tensor(uc.map),
                          at::tensor(uc.lut)};
  int64_t neighbours = 0, compared = 0;
  double worst = 0;
  for (const std::string tag : {"8bit", "32bit"}) {
    for (int step = 1; step < kSteps; ++step) {
      for (const char* name : kNames) {
        const std::string before = tag + "." + std::to_string(step - 1) + "." + name;
        const std::string after = tag + "." + std::to_string(step) + "." + name;
        SCOPED_TRACE(after);
        at::Tensor p = (*ref)(before + ".param");
        const at::Tensor g = (*ref)("grad." + std::to_string(step) + "." + name);
        if (!ref->Has(before + ".absmax1")) {
          at::Tensor m = (*ref)(before + ".state1"), v = (*ref)(before + ".state2");
          DeviceUpdate32bit(p, g, m, v, Hyper(step + 1), kChunk);
          EXPECT_TRUE(at::equal(p, (*ref)(after + ".param")));
          EXPECT_TRUE(at::equal(m, (*ref)(after + ".state1")));
          EXPECT_TRUE(at::equal(v, (*ref)(after + ".state2")));
          continue;
        }
        const EightBitMoments s{(*ref)(before + ".state1").to(at::kByte).view(p.sizes()),
                                (*ref)(before + ".absmax1"),
                                (*ref)(before + ".state2").to(at::kByte).view(p.sizes()),
                                (*ref)(before + ".absmax2")};
        DeviceUpdate8bit(p, g, s, codes, Hyper(step + 1), kChunk);
        // The parameters see the dequantised moments only, which are bnb's: equal.
        const at::Tensor expected = (*ref)(after + ".param");
        worst = std::max(worst, (p - expected).abs().max().item<double>());
        EXPECT_TRUE(at::equal(p, expected));
        EXPECT_TRUE(at::equal(s.absmax1, (*ref)(after + ".absmax1")));
        EXPECT_TRUE(at::equal(s.absmax2, (*ref)(after + ".absmax2")));
        for (const char* k : {".state1", ".state2"}) {
          const at::Tensor ours = Codes(k[6] == '1' ? s.codes1 : s.codes2);
          const at::Tensor theirs = (*ref)(after + k);
          EXPECT_LE((ours - theirs).abs().max().item<int>(), 1);
          neighbours += ours.ne(theirs).sum().item<int64_t>();
          compared += ours.numel();
        }
      }
    }
  }
  std::printf("device form: %lld of %lld codes a neighbour of bitsandbytes'; largest parameter "
              "difference %.3g\n",
              static_cast<long long>(neighbours), static_cast<long long>(compared), worst);
  EXPECT_LE(neighbours * 1000, compared);  // under 0.1 %
}

}  // namespace
}  // namespace memsweep::adamw_8bit_reference_test

#undef ADAMW_BNB_SKIP_WITHOUT_REFERENCES
