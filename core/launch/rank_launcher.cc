#include "core/launch/rank_launcher.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "core/comm/rank_env.h"
#include "core/process/child_process.h"

namespace memsweep::dist {
namespace {

constexpr size_t kTailBytes = 1500;

// Rank r: the rank variables in its environment, stderr to its own file, stdout discarded but for
// rank 0's (the progress lines).
std::unique_ptr<process::ChildProcess> StartRank(const std::vector<std::string>& argv,
                                                 const RankEnv& env, const std::string& err) {
  process::ChildOptions options;
  const auto variables = RankVariables(env);
  options.environment.assign(variables.begin(), variables.end());
  options.stdout_mode = env.rank == 0 ? process::ChildOptions::Stdout::kInherit
                                      : process::ChildOptions::Stdout::kDiscard;
  options.stderr_path = err;
  return std::make_unique<process::ChildProcess>(argv, options);
}

}  // namespace

std::string RankExit::Describe() const {
  std::string text = "rank " + std::to_string(rank) + ": ";
  if (killed_by_launcher) {
    text += "killed after another rank failed";
  } else if (signaled) {
    text += "crashed: signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  } else {
    text += "exit code " + std::to_string(code);
  }
  if (!stderr_tail.empty()) text += ": " + stderr_tail;
  return text;
}

std::vector<RankExit> LaunchRanks(const std::vector<std::string>& argv, int world_size,
                                  const std::string& stderr_prefix, double grace_seconds) {
  RankEnv env;
  env.world_size = world_size;
  env.master_addr = "127.0.0.1";
  env.master_port = FreeTcpPort();
  std::vector<std::unique_ptr<process::ChildProcess>> ranks(static_cast<size_t>(world_size));
  std::vector<RankExit> exits(static_cast<size_t>(world_size));
  std::vector<size_t> finish_order;
  for (int r = 0; r < world_size; ++r) {
    env.rank = r;
    env.local_rank = r;
    exits[r].rank = r;
    ranks[r] = StartRank(argv, env, stderr_prefix + std::to_string(r) + ".stderr");
  }
  auto record = [&](size_t r, const process::ExitStatus& status) {
    finish_order.push_back(r);
    exits[r].signaled = status.signaled;
    exits[r].signal = status.signal;
    exits[r].code = status.code;
  };
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> first_failure;
  std::vector<bool> done(ranks.size(), false);
  size_t running = ranks.size();
  while (running > 0) {
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (done[r]) continue;
      const std::optional<process::ExitStatus> status = ranks[r]->Poll();
      if (!status) continue;
      done[r] = true;
      --running;
      record(r, *status);
      if (!exits[r].Ok() && !first_failure) first_failure = Clock::now();
    }
    if (running == 0) break;
    if (first_failure &&
        std::chrono::duration<double>(Clock::now() - *first_failure).count() > grace_seconds) {
      for (size_t r = 0; r < ranks.size(); ++r) {
        if (done[r]) continue;
        record(r, ranks[r]->Kill());
        exits[r].killed_by_launcher = true;
      }
      break;
    }
    usleep(20000);
  }
  for (int r = 0; r < world_size; ++r) {
    exits[r].stderr_tail = process::FileTail(stderr_prefix + std::to_string(r) + ".stderr", kTailBytes);
    std::remove((stderr_prefix + std::to_string(r) + ".stderr").c_str());
  }
  // Keep the finishing order: the first rank to fail is usually the cause.
  std::vector<RankExit> ordered;
  for (size_t r : finish_order) ordered.push_back(exits[r]);
  return ordered;
}

std::string DescribeFailures(const std::vector<RankExit>& exits) {
  std::string text;
  for (const RankExit& exit : exits) {
    if (exit.Ok()) continue;
    if (!text.empty()) text += "\n";
    text += exit.Describe();
  }
  return text;
}

}  // namespace memsweep::dist
