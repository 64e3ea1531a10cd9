// optimizer/adamw_32bit (bitsandbytes' AdamW32bit): the plugin as a run uses it — fp32 moments,
// 8 bytes per parameter as optimizer/adamw's; a loss trajectory that follows optimizer/adamw's
// (the same update up to rounding); paged state refused on the CPU. Its state, peak and estimate
// to the byte, and its steps against bitsandbytes, are tested with adamw_8bit's (the same code:
// tests/plugins/optimizer/adamw_8bit/).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "support/run_configs.h"

namespace memsweep::adamw_32bit_test {
namespace {

using testing_support::Losses;
using testing_support::TinyRun;
using testing_support::Train;

TEST(AdamW32bitTest, KeepsTwoFp32MomentsPerParameterAndFollowsAdamW) {
  const config::RunConfig cfg = TinyRun(4, {"strategies.optimizer.plugin=\"adamw_32bit\""});
  const train::RunResult bnb = Train(cfg);
  const train::RunResult adamw = Train(TinyRun(4));
  ASSERT_EQ(bnb.status, train::RunStatus::kOk) << bnb.error;
  ASSERT_EQ(adamw.status, train::RunStatus::kOk) << adamw.error;
  const int64_t n = cfg.model.llama.ParameterCount();
  EXPECT_EQ(bnb.memory.optimizer_bytes, 8 * n);
  EXPECT_EQ(bnb.memory.optimizer_bytes, adamw.memory.optimizer_bytes);
  // bitsandbytes' CPU backend: g·1, √v and √v + eps·c2 live at once (12 bytes per element of
  // the largest tensor, beside the state) where optimizer/adamw's fused pass allocates nothing.
  std::printf("optimizer_step peak: adamw_32bit %lld, adamw %lld bytes\n",
              static_cast<long long>(bnb.memory.phases[2].peak_bytes),
              static_cast<long long>(adamw.memory.phases[2].peak_bytes));
  EXPECT_GT(bnb.memory.phases[2].peak_bytes, adamw.memory.phases[2].peak_bytes);
  testing_support::ExpectSameTrajectory(Losses(bnb), Losses(adamw),
                                        testing_support::StepPathTerms(cfg), "adamw_32bit");
}

TEST(AdamW32bitTest, RefusesPagedStateOnTheCpu) {
  try {
    Train(TinyRun(1, {"strategies.optimizer.plugin=\"adamw_32bit\"",
                      "strategies.optimizer.paged=true"}));
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("on the CPU use paged = false"), std::string::npos)
        << e.what();
  }
}

TEST(AdamW32bitTest, RejectsAParameterOfTheWrongType) {
  try {
    Train(TinyRun(1, {"strategies.optimizer.plugin=\"adamw_32bit\"",
                      "strategies.optimizer.paged=\"yes\""}));
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("paged"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace memsweep::adamw_32bit_test
