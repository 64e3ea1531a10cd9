// optimizer/torch_adamw against torch.optim.AdamW itself (torch_reference/make_references.py, run
// by ctest as TorchAdamWReference.StepsEqualTorch): the same six steps on the same tensors
// (fp32 and bf16, one with a late gradient, one without) give bit for bit torch's tensors,
// moments and step counts, per implementation and parameter grouping (one group, or the
// Trainer's two: 2+ dims with weight decay, then 1-D without); and each step's peak above the
// bytes it finds equals what torch.profiler measured for torch's step.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/memory/tracking_allocator.h"
#include "core/model/safetensors.h"
#include "optimizer/torch_adamw/torch_adamw.h"

namespace memsweep::torch_adamw_reference_test {
namespace {

using plugins::torch_adamw::Implementation;
using plugins::torch_adamw::ImplementationName;
using plugins::torch_adamw::ParamGroups;
using plugins::torch_adamw::ParamGroupsName;
using plugins::torch_adamw::TorchAdamW;

// Equal bits (a value comparison would take -0 for 0 and fail on NaN).
bool SameBits(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const at::ScalarType bits = a.element_size() == 2 ? at::kShort : at::kInt;
  return at::equal(a.contiguous().view(bits), b.contiguous().view(bits));
}

TEST(TorchAdamWReferenceTest, StepsEqualTorchBitForBitAndInPeak) {
  const char* dir = std::getenv("MEMSWEEP_TORCH_ADAMW_REFERENCE_DIR");
  if (dir == nullptr) {
    GTEST_SKIP() << "MEMSWEEP_TORCH_ADAMW_REFERENCE_DIR is not set: ctest runs this test as "
                    "TorchAdamWReference.StepsEqualTorch, with torch's figures";
  }
  std::ifstream in(std::string(dir) + "/steps.json");
  ASSERT_TRUE(in) << dir << "/steps.json";
  const nlohmann::json steps = nlohmann::json::parse(in);
  const model::SafetensorsSet inputs = model::OpenSafetensors(std::string(dir) + "/inputs.safetensors");
  const model::SafetensorsSet results =
      model::OpenSafetensors(std::string(dir) + "/results.safetensors");
  const auto read = [](const model::SafetensorsSet& set, const std::string& name) -> at::Tensor {
    const model::TensorEntry* e = set.Find(name);
    return e == nullptr ? at::Tensor() : set.Read(*e).clone();
  };
  const int64_t count = steps.at("tensors");
  memory::TrackingAllocator& tracker = memory::TrackingAllocator::Instance();

  for (const ParamGroups groups : {ParamGroups::kSingle, ParamGroups::kTrainer}) {
    for (const Implementation implementation :
         {Implementation::kForLoop, Implementation::kForeach, Implementation::kFused}) {
      const std::string name =
          std::string(ParamGroupsName(groups)) + "." + ImplementationName(implementation);
      std::vector<at::Tensor> tensors;
      for (int64_t i = 0; i < count; ++i) {
        at::Tensor p = read(inputs, "p" + std::to_string(i));
        p.set_requires_grad(true);
        tensors.push_back(p);
      }
      TorchAdamW optimizer(tensors, implementation, groups);
      const nlohmann::json& torch_rises = steps.at("step_peak_rises")
                                              .at(ParamGroupsName(groups))
                                              .at(ImplementationName(implementation));
      for (int64_t k = 0; k < steps.at("steps").get<int64_t>(); ++k) {
        for (int64_t i = 0; i < count; ++i) {
          tensors[i].mutable_grad() =
              read(inputs, "g" + std::to_string(k) + "_" + std::to_string(i));
        }
        OptimizerStepSpec spec;
        spec.lr = steps.at("lrs").at(k);
        spec.beta1 = steps.at("beta1");
        spec.beta2 = steps.at("beta2");
        spec.eps = steps.at("eps");
        spec.weight_decay = steps.at("weight_decay");
        spec.step = k + 1;
        const int64_t before = tracker.AllocatedBytes();
        tracker.ResetWindowPeak();
        optimizer.Step(spec);
        const int64_t rise = tracker.WindowPeakBytes() - before;
        const int64_t reference = torch_rises.at(k);
        std::printf("%-16s step %lld: peak above the bytes held %lld, torch %lld (%.6f)\n",
                    name.c_str(), static_cast<long long>(k + 1), static_cast<long long>(rise),
                    static_cast<long long>(reference),
                    static_cast<double>(rise) / static_cast<double>(reference));
        EXPECT_NEAR(static_cast<double>(rise) / static_cast<double>(reference), 1.0, 0.01)
            << name << " step " << k + 1;
        EXPECT_EQ(rise, reference) << name << " step " << k + 1 << " (to the byte)";
      }
      // State per tensor that has one, in order: step, exp_avg, exp_avg_sq.
      const std::vector<at::Tensor> state = optimizer.StateTensors();
      size_t next = 0;
      for (int64_t i = 0; i < count; ++i) {
        const std::string n = std::to_string(i);
        EXPECT_TRUE(SameBits(tensors[i].detach(), read(results, name + ".param" + n)))
            << name << " tensor " << i;
        const at::Tensor exp_avg = read(results, name + ".exp_avg" + n);
        if (!exp_avg.defined()) continue;  // torch made no state for it: neither did memsweep
        ASSERT_LT(next + 2, state.size() + 0) << name << " tensor " << i;
        EXPECT_TRUE(SameBits(state[next], read(results, name + ".step" + n))) << name << " " << i;
        EXPECT_TRUE(SameBits(state[next + 1], exp_avg)) << name << " exp_avg " << i;
        EXPECT_TRUE(SameBits(state[next + 2], read(results, name + ".exp_avg_sq" + n)))
            << name << " exp_avg_sq " << i;
        next += 3;
      }
      EXPECT_EQ(next, state.size()) << name;
    }
  }
}

}  // namespace
}  // namespace memsweep::torch_adamw_reference_test
