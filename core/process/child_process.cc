#include "core/process/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace memsweep::process {
namespace {

ExitStatus StatusOf(int wait_status, const rusage& usage) {
  ExitStatus status;
  status.signaled = WIFSIGNALED(wait_status);
  status.signal = status.signaled ? WTERMSIG(wait_status) : 0;
  status.code = status.signaled ? 0 : WEXITSTATUS(wait_status);
  status.max_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux: kilobytes
  return status;
}

}  // namespace

bool ForkIsSafe() {
  std::error_code error;
  int threads = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++threads;
  }
  return !error && threads == 1;
}

std::string FileTail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  if (all.size() > max_bytes) all = "..." + all.substr(all.size() - max_bytes);
  while (!all.empty() && (all.back() == '\n' || all.back() == ' ')) all.pop_back();
  return all;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const ChildOptions& options) {
  Start(
      [&argv] {
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
      },
      options);
}

ChildProcess::ChildProcess(const std::function<int()>& body, const ChildOptions& options) {
  Start(
      [&body] {
        signal(SIGTERM, SIG_DFL);
        int code = 1;
        try {
          code = body();
        } catch (const std::exception& e) {
          std::fprintf(stderr, "%s\n", e.what());
        } catch (...) {
          std::fprintf(stderr, "the child threw a non-standard exception\n");
        }
        // _exit, not exit: the parent's objects (a database connection, say) belong to the
        // parent; the child only flushes its own output.
        std::cout.flush();
        std::cerr.flush();
        std::fflush(nullptr);
        _exit(code);
      },
      options);
}

void ChildProcess::Start(const std::function<void()>& in_child, const ChildOptions& options) {
  int pipe_fds[2] = {-1, -1};
  const bool piped = options.stdout_mode == ChildOptions::Stdout::kPipe;
  if (piped && pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const pid_t parent = getpid();
  // Output the parent has buffered must not be written a second time by a forked child.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (options.ignore_sigint) signal(SIGINT, SIG_IGN);
    if (getppid() != parent) _exit(127);
    for (const auto& [name, value] : options.environment) {
      setenv(name.c_str(), value.c_str(), 1);
    }
    if (piped) {
      dup2(pipe_fds[1], STDOUT_FILENO);
      close(pipe_fds[0]);
    } else if (options.stdout_mode == ChildOptions::Stdout::kDiscard) {
      const int null_fd = open("/dev/null", O_WRONLY);
      if (null_fd >= 0) dup2(null_fd, STDOUT_FILENO);
    }
    if (!options.stderr_path.empty()) {
      const int err = open(options.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (err >= 0) dup2(err, STDERR_FILENO);
    }
    in_child();
    _exit(127);
  }
  if (piped) {
    close(pipe_fds[1]);
    stdout_fd_ = pipe_fds[0];
  }
}

ChildProcess::~ChildProcess() {
  if (!status_ && pid_ > 0) Kill();
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

std::optional<ExitStatus> ChildProcess::Poll() {
  if (status_) return status_;
  int wait_status = 0;
  rusage usage{};
  if (wait4(pid_, &wait_status, WNOHANG, &usage) == pid_) status_ = StatusOf(wait_status, usage);
  return status_;
}

ExitStatus ChildProcess::Stop(double grace_seconds) {
  if (Poll()) return *status_;
  kill(pid_, SIGTERM);
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
         grace_seconds) {
    if (Poll()) return *status_;
    usleep(20000);
  }
  return Kill();
}

ExitStatus ChildProcess::Kill() {
  if (Poll()) return *status_;
  kill(pid_, SIGKILL);
  int wait_status = 0;
  rusage usage{};
  wait4(pid_, &wait_status, 0, &usage);
  status_ = StatusOf(wait_status, usage);
  return *status_;
}

}  // namespace memsweep::process
