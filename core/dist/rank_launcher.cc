#include "core/dist/rank_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "core/dist/rank_env.h"

namespace memsweep::dist {
namespace {

constexpr size_t kTailBytes = 1500;

std::string Tail(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  if (all.size() > kTailBytes) all = "..." + all.substr(all.size() - kTailBytes);
  while (!all.empty() && (all.back() == '\n' || all.back() == ' ')) all.pop_back();
  return all;
}

pid_t Spawn(const std::vector<std::string>& argv, const RankEnv& env, const std::string& err) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  for (const auto& [name, value] : RankVariables(env)) setenv(name.c_str(), value.c_str(), 1);
  if (env.rank != 0) {
    const int null_fd = open("/dev/null", O_WRONLY);
    if (null_fd >= 0) dup2(null_fd, STDOUT_FILENO);
  }
  const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
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
  std::vector<pid_t> pids(static_cast<size_t>(world_size), -1);
  std::vector<RankExit> exits(static_cast<size_t>(world_size));
  std::vector<size_t> finish_order;
  for (int r = 0; r < world_size; ++r) {
    env.rank = r;
    env.local_rank = r;
    exits[r].rank = r;
    pids[r] = Spawn(argv, env, stderr_prefix + std::to_string(r) + ".stderr");
  }
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> first_failure;
  size_t running = pids.size();
  while (running > 0) {
    for (size_t r = 0; r < pids.size(); ++r) {
      if (pids[r] <= 0) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      pids[r] = -1;
      --running;
      finish_order.push_back(r);
      exits[r].signaled = WIFSIGNALED(status);
      exits[r].signal = exits[r].signaled ? WTERMSIG(status) : 0;
      exits[r].code = exits[r].signaled ? 0 : WEXITSTATUS(status);
      if (!exits[r].Ok() && !first_failure) first_failure = Clock::now();
    }
    if (running == 0) break;
    if (first_failure &&
        std::chrono::duration<double>(Clock::now() - *first_failure).count() > grace_seconds) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (pids[r] <= 0) continue;
        kill(pids[r], SIGKILL);
        waitpid(pids[r], nullptr, 0);
        pids[r] = -1;
        exits[r].killed_by_launcher = true;
        exits[r].signaled = true;
        exits[r].signal = SIGKILL;
        finish_order.push_back(r);
      }
      break;
    }
    usleep(20000);
  }
  for (int r = 0; r < world_size; ++r) {
    exits[r].stderr_tail = Tail(stderr_prefix + std::to_string(r) + ".stderr");
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
