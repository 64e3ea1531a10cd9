// A worker that outgrows host memory — here an RLIMIT_AS cap of 8 GiB on the sweep, which its
// workers inherit — ends its cell `failed` saying it ran out of host memory (not the device
// budget), and the sweep goes on. Skipped, saying why, without util-linux's prlimit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/results/results_db.h"
#include "support/cli_runner.h"
#include "support/results_db_fixtures.h"

namespace {

namespace fs = std::filesystem;
using namespace memsweep::testing_support;

TEST(HostMemoryLimitTest, AWorkerOverItsAddressSpaceLimitFailsNamingHostMemory) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space for its shadow memory: "
                  "no worker starts under an RLIMIT_AS cap in a sanitizer build";
#endif
  if (std::system("command -v prlimit > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "util-linux's prlimit is not installed";
  }
  const fs::path dir = FreshTempDir("host_memory_limit");
  const fs::path experiment = dir / "big.toml";
  // Micro-batch 64 x 4096 tokens needs about 66 GiB; micro-batch 1 about 1 GiB.
  std::ofstream(experiment)
      << "[experiment]\nname = \"big\"\nsteps = 2\nwarmup_steps = 1\n"
      << "[model]\npreset = \"tiny\"\nmax_position_embeddings = 4096\n"
      << "[data]\npath = \"" << SourcePath("experiments/data/devils-dictionary.jsonl") << "\"\n"
      << "[device]\nthreads = 1\n"
      << "[strategies.batching]\nseq_len = 4096\npadding = \"max_length\"\n"
      << "[matrix]\n\"strategies.batching.micro_batch_size\" = [64, 1]\n";
  const fs::path db_path = dir / "r.db";
  // --no-estimate: the host-memory check before a cell starts would refuse the large cell.
  const Outcome out = RunMemsweep(
      "run " + experiment.string() + " --db " + db_path.string() + " --no-estimate",
      "prlimit --as=" + std::to_string(8LL << 30));
  EXPECT_EQ(out.exit_code, 3) << out.output;
  memsweep::results::ResultsDb db(db_path.string(), memsweep::results::ResultsDb::Mode::kReadOnly);
  const auto rows = db.Query("SELECT status, error FROM runs ORDER BY cell_index");
  ASSERT_EQ(rows.rows.size(), 2u) << out.output;
  EXPECT_EQ(rows.rows[0][0].value_or(""), "failed");
  EXPECT_EQ(rows.rows[0][1].value_or("").rfind(
                "out of host memory (not the device budget): the worker could not allocate "
                "within its address-space limit (RLIMIT_AS 8.00 GiB)",
                0),
            0u)
      << rows.rows[0][1].value_or("");
  EXPECT_EQ(rows.rows[1][0].value_or(""), "ok") << rows.rows[1][1].value_or("");
}

}  // namespace
