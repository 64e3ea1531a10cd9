// An MFU above 1 is never reported as a utilisation (core/train/summary.h, CheckMfuAgainstPeak):
// the peak is measured again, and a figure still above 1 is marked.
#include "core/train/summary.h"

#include <gtest/gtest.h>

namespace memsweep::train {
namespace {

// A run that ran its products at `rate` FLOP/s against a kept peak of `peak`.
RunSummary RunAt(double rate, double peak) {
  RunSummary s;
  s.flops_per_token = 1e6;
  s.tokens_per_s = rate / s.flops_per_token;
  s.peak_flops = peak;
  s.mfu = rate / peak;
  return s;
}

TEST(SummaryTest, AnMfuUpToOneStandsAndMeasuresNothing) {
  RunSummary s = RunAt(4e11, 4e11);
  bool measured = false;
  CheckMfuAgainstPeak(s, [&] {
    measured = true;
    return 1e12;
  });
  EXPECT_FALSE(measured);
  EXPECT_EQ(s.mfu, 1.0);
  EXPECT_EQ(s.peak_flops_check, "");
}

TEST(SummaryTest, ARunThatBeatsItsPeakMeasuresItAgain) {
  RunSummary s = RunAt(5.4e11, 4.52e11);  // the MFU of 119 % a busy calibration gave
  CheckMfuAgainstPeak(s, [] { return 6e11; });
  EXPECT_EQ(s.peak_flops, 6e11);
  EXPECT_DOUBLE_EQ(s.mfu, 0.9);
  EXPECT_EQ(s.peak_flops_check, "remeasured");
}

TEST(SummaryTest, AnMfuAboveOneEvenSoIsMarked) {
  RunSummary low_again = RunAt(5.4e11, 4.52e11);
  CheckMfuAgainstPeak(low_again, [] { return 4.5e11; });  // measured lower: the kept one stays
  EXPECT_EQ(low_again.peak_flops, 4.52e11);
  EXPECT_GT(low_again.mfu, 1.0);
  EXPECT_EQ(low_again.peak_flops_check, "above_peak");

  RunSummary higher_but_not_enough = RunAt(5.4e11, 4.52e11);
  CheckMfuAgainstPeak(higher_but_not_enough, [] { return 5e11; });
  EXPECT_EQ(higher_but_not_enough.peak_flops, 5e11);
  EXPECT_EQ(higher_but_not_enough.peak_flops_check, "above_peak");

  RunSummary no_remeasure = RunAt(5.4e11, 4.52e11);  // a multi-process run
  CheckMfuAgainstPeak(no_remeasure, {});
  EXPECT_EQ(no_remeasure.peak_flops_check, "above_peak");

  RunSummary failing = RunAt(5.4e11, 4.52e11);
  CheckMfuAgainstPeak(failing, []() -> double { throw std::runtime_error("device lost"); });
  EXPECT_EQ(failing.peak_flops_check, "above_peak");
}

}  // namespace
}  // namespace memsweep::train
