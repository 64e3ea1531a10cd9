#include "core/sweep/cell_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace memsweep::sweep {
namespace {

constexpr int kPollMilliseconds = 100;
constexpr double kKillGraceSeconds = 2.0;
constexpr size_t kStderrTailBytes = 2000;

std::string ReadTail(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  if (all.size() > kStderrTailBytes) all = "..." + all.substr(all.size() - kStderrTailBytes);
  while (!all.empty() && (all.back() == '\n' || all.back() == ' ')) all.pop_back();
  return all;
}

}  // namespace

std::string SelfExecutable() {
  char buffer[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) throw std::runtime_error("cannot resolve /proc/self/exe");
  return std::string(buffer, static_cast<size_t>(n));
}

std::string CellExit::Describe() const {
  std::string text;
  switch (kind) {
    case CellExitKind::kExited: text = "exit code " + std::to_string(code); break;
    case CellExitKind::kSignaled:
      text = "crashed: signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
      break;
    case CellExitKind::kTimedOut: text = "timed out"; break;
    case CellExitKind::kInterrupted: text = "interrupted"; break;
  }
  return text;
}

bool ForkIsSafe() {
  std::error_code error;
  int threads = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++threads;
  }
  return !error && threads == 1;
}

CellProcess::CellProcess(const std::vector<std::string>& argv, const std::string& stderr_path)
    : stderr_path_(stderr_path) {
  Start(
      [&argv] {
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
      },
      stderr_path);
}

CellProcess::CellProcess(const std::function<int()>& body, const std::string& stderr_path)
    : stderr_path_(stderr_path) {
  Start(
      [&body] {
        int code = 1;
        try {
          code = body();
        } catch (const std::exception& e) {
          std::fprintf(stderr, "%s\n", e.what());
        } catch (...) {
          std::fprintf(stderr, "the worker threw a non-standard exception\n");
        }
        // _exit, not exit: the runner's objects (its database connection among them) belong to
        // the runner; the child only flushes its own output.
        std::cout.flush();
        std::cerr.flush();
        std::fflush(nullptr);
        _exit(code);
      },
      stderr_path);
}

void CellProcess::Start(const std::function<void()>& in_child, const std::string& stderr_path) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  const pid_t parent = getpid();
  // Output the runner has buffered must not be written a second time by the child.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid_ == 0) {
    // Child: die with the runner; stdout to the pipe, stderr to the file. Ctrl-C reaches the
    // whole process group: the worker ignores it and lets the runner stop it (which records the
    // cell as pending, not as crashed). SIGTERM ends it (the runner's own handler is not kept).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_DFL);
    if (getppid() != parent) _exit(127);
    dup2(pipe_fds[1], STDOUT_FILENO);
    close(pipe_fds[0]);
    const int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err >= 0) dup2(err, STDERR_FILENO);
    in_child();
    _exit(127);
  }
  close(pipe_fds[1]);
  stdout_fd_ = pipe_fds[0];
}

CellProcess::~CellProcess() {
  if (pid_ > 0) {
    Kill();
    waitpid(pid_, nullptr, 0);
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

void CellProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
         kKillGraceSeconds) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    usleep(20000);
  }
  kill(pid_, SIGKILL);
}

CellExit CellProcess::Wait(double timeout_seconds,
                           const std::function<void(const std::string&)>& on_line,
                           const std::function<bool()>& stop_requested) {
  CellExit result;
  const auto start = std::chrono::steady_clock::now();
  std::string pending;
  bool open_pipe = true;
  int status = 0;
  while (true) {
    if (open_pipe) {
      pollfd fd{stdout_fd_, POLLIN, 0};
      if (poll(&fd, 1, kPollMilliseconds) > 0) {
        char buffer[4096];
        const ssize_t n = read(stdout_fd_, buffer, sizeof buffer);
        if (n <= 0) {
          open_pipe = false;
        } else {
          pending.append(buffer, static_cast<size_t>(n));
          size_t newline;
          while ((newline = pending.find('\n')) != std::string::npos) {
            if (on_line) on_line(pending.substr(0, newline));
            pending.erase(0, newline + 1);
          }
        }
      }
    } else {
      usleep(kPollMilliseconds * 1000);
    }
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (done == pid_) break;
    const bool timed_out = timeout_seconds > 0 && result.seconds > timeout_seconds;
    const bool stopping = stop_requested && stop_requested();
    if (timed_out || stopping) {
      Kill();
      if (pid_ > 0) waitpid(pid_, &status, 0);
      pid_ = -1;
      result.kind = timed_out ? CellExitKind::kTimedOut : CellExitKind::kInterrupted;
      result.stderr_tail = ReadTail(stderr_path_);
      return result;
    }
  }
  pid_ = -1;
  if (WIFSIGNALED(status)) {
    result.kind = CellExitKind::kSignaled;
    result.signal = WTERMSIG(status);
  } else {
    result.kind = CellExitKind::kExited;
    result.code = WEXITSTATUS(status);
  }
  result.stderr_tail = ReadTail(stderr_path_);
  return result;
}

}  // namespace memsweep::sweep
