// A real full disk during a sweep: the results database on a 1 MiB tmpfs that the runs' figures
// and allocation histories outgrow. The sweep stops with a clear error, the database stays
// consistent, and once there is space again the same command finishes every cell, none twice.
// Needs root (to mount); skipped, saying why, where mounting is not allowed.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/results/results_db.h"
#include "support/cli_runner.h"
#include "support/results_db_fixtures.h"

namespace {

namespace fs = std::filesystem;
using namespace memsweep::testing_support;

// A tmpfs of `size` at `where`, unmounted when it goes.
class SmallDisk {
 public:
  SmallDisk(const fs::path& where, const std::string& size) : where_(where) {
    fs::create_directories(where);
    mounted_ = mount("tmpfs", where.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
    if (!mounted_) error_ = std::strerror(errno);
  }
  ~SmallDisk() {
    if (mounted_) umount2(where_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  bool Grow(const std::string& size) {
    return mount("tmpfs", where_.c_str(), "tmpfs", MS_REMOUNT, ("size=" + size).c_str()) == 0;
  }

 private:
  fs::path where_;
  bool mounted_ = false;
  std::string error_;
};

TEST(DiskFullTest, TheSweepStopsCleanlyAndFinishesOnceThereIsSpace) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  const fs::path dir = FreshTempDir("disk_full");
  SmallDisk disk(dir / "disk", "1m");
  if (!disk.mounted()) GTEST_SKIP() << "mounting a tmpfs is not allowed here: " << disk.error();
  const fs::path experiment = dir / "full.toml";
  std::ofstream(experiment)
      << "[experiment]\nname = \"full\"\nsteps = 3\nwarmup_steps = 1\nmemory_history = 200000\n"
      << "[model]\npreset = \"tiny\"\n"
      << "[data]\npath = \"" << SourcePath("experiments/data/devils-dictionary.jsonl") << "\"\n"
      << "[device]\nthreads = 1\n[strategies.batching]\nseq_len = 64\n"
      << "[matrix]\n\"strategies.batching.micro_batch_size\" = [1, 2, 3, 4, 5, 6]\n";
  const fs::path db_path = dir / "disk" / "r.db";
  const std::string command = "run " + experiment.string() + " --db " + db_path.string();

  Outcome out = RunMemsweep(command);
  ASSERT_EQ(out.exit_code, 2) << out.output;  // the disk filled before the sixth cell
  EXPECT_NE(out.output.find("database or disk is full"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("the sweep stopped: cell "), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("then run the same command: finished cells are skipped"),
            std::string::npos)
      << out.output;
  int64_t recorded = 0;
  {
    memsweep::results::ResultsDb db(db_path.string(), memsweep::results::ResultsDb::Mode::kReadOnly);
    EXPECT_EQ(QueryValue(db, "PRAGMA integrity_check"), "ok");
    recorded = QueryCount(db, "SELECT count(*) FROM runs WHERE status = 'ok'");
    EXPECT_LT(recorded, 6);
    // A recorded run is whole: its figures and its history.
    EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM run_metrics"), recorded);
    EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM memory_snapshots"), recorded);
  }

  ASSERT_TRUE(disk.Grow("64m"));
  out = RunMemsweep(command);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  EXPECT_NE(out.output.find("6 cells: " + std::to_string(6 - recorded) + " ok, 0 oom, 0 failed, "
                            "0 timed out, " + std::to_string(recorded) + " already done"),
            std::string::npos)
      << out.output;
  memsweep::results::ResultsDb db(db_path.string(), memsweep::results::ResultsDb::Mode::kReadOnly);
  EXPECT_EQ(QueryValue(db, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM runs"), 6);
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM runs WHERE status = 'ok'"), 6);
  EXPECT_EQ(QueryCount(db, "SELECT count(DISTINCT cell_hash) FROM runs"), 6);
  EXPECT_EQ(QueryCount(db, "SELECT count(*) FROM memory_snapshots"), 6);
}

}  // namespace
