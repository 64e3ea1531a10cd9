// LaunchRanks: runs one command as `world_size` rank processes on this machine, the way torchrun
// does: each gets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1 and a MASTER_PORT that was
// free when the launcher chose it. Rank 0's stdout goes to the launcher's stdout (progress
// lines); every rank's stderr goes to its own file.
//
// When a rank fails (non-zero exit or a signal), the others get `grace_seconds` to notice it
// through their collectives' errors or timeouts and are then killed: one bad rank ends the
// group, never the caller. Ranks die with the launcher (PR_SET_PDEATHSIG).
//
//   std::vector<RankExit> exits = LaunchRanks(argv, 2, "/tmp/cell", 10.0);
#pragma once

#include <string>
#include <vector>

namespace memsweep::dist {

struct RankExit {
  int rank = 0;
  bool signaled = false;
  int code = 0;    // exit code (signaled == false)
  int signal = 0;  // the signal that ended it (signaled == true)
  bool killed_by_launcher = false;  // still running after another rank failed
  std::string stderr_tail;
  bool Ok() const { return !signaled && code == 0; }
  std::string Describe() const;  // "rank 1: exit code 3: <last stderr lines>"
};

std::vector<RankExit> LaunchRanks(const std::vector<std::string>& argv, int world_size,
                                  const std::string& stderr_prefix, double grace_seconds);

// Every failed rank's description, one per line, the first failure first (the cause; later ones
// are usually its consequences).
std::string DescribeFailures(const std::vector<RankExit>& exits);

}  // namespace memsweep::dist
