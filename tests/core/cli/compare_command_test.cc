// `memsweep compare` as a user runs it, on the hand-built ablation of support/ablation_db.h.
#include <gtest/gtest.h>

#include <string>

#include "support/ablation_db.h"
#include "support/results_db_fixtures.h"
#include "support/cli_runner.h"

namespace {

using memsweep::testing_support::BuildAblationDb;
using memsweep::testing_support::FreshDbPath;
using memsweep::testing_support::RunMemsweep;

TEST(CompareCommandTest, PrintsCellsAndEffects) {
  const std::string db = FreshDbPath();
  BuildAblationDb(db);
  auto out = RunMemsweep("compare --db " + db + " --format csv");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("\r\n0,1,x,2,ok,1000,1.0,1.0,,,,500,1.0,200.0,1.0,2.5,0.0,reference,,,,,,,"
                            "the reference run\r\n"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("\r\n1,2,x,1,ok,500,0.5,0.5,,,,250,0.5,400.0,2.0,2.75,0.25,n/a,"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("\r\nb,y,1,1,2.0,2.0,0.3333333333333333,-0.375\r\n"), std::string::npos)
      << out.output;

  out = RunMemsweep("compare --db " + db + " --experiment ablation --baseline a=2,b=x");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("experiment 'ablation'"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("4 cells from 5 runs with status ok or oom; 1 other run"),
            std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("baseline: cell 1 (a=2, b=x), 1 ok run"), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("effect of each factor"), std::string::npos) << out.output;
}

TEST(CompareCommandTest, BadBaselineOrExperimentExitsTwo) {
  const std::string db = FreshDbPath();
  BuildAblationDb(db);
  auto out = RunMemsweep("compare --db " + db + " --baseline b=x");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("give more keys"), std::string::npos) << out.output;
  out = RunMemsweep("compare --db " + db + " --experiment nope");
  EXPECT_EQ(out.exit_code, 2) << out.output;
  out = RunMemsweep("compare --db " + FreshDbPath("missing.db"));
  EXPECT_EQ(out.exit_code, 2) << out.output;
}

}  // namespace
