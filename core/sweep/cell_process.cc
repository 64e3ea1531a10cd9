#include "core/sweep/cell_process.h"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>

namespace memsweep::sweep {
namespace {

constexpr int kPollMilliseconds = 100;
constexpr double kKillGraceSeconds = 2.0;
constexpr size_t kStderrTailBytes = 2000;

}  // namespace

int64_t KernelOomKills() {
  std::ifstream in("/proc/vmstat");
  std::string name;
  int64_t value = 0;
  while (in >> name >> value) {
    if (name == "oom_kill") return value;
  }
  return -1;
}

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

// stdout to a pipe (progress lines), stderr to the file; Ctrl-C reaches the whole process group:
// the worker ignores it and lets the runner stop it (which records the cell as pending, not as
// crashed).
process::ChildOptions CellProcess::Options(const std::string& stderr_path) {
  process::ChildOptions options;
  options.stdout_mode = process::ChildOptions::Stdout::kPipe;
  options.stderr_path = stderr_path;
  options.ignore_sigint = true;
  return options;
}

CellProcess::CellProcess(const std::vector<std::string>& argv, const std::string& stderr_path)
    : child_(std::make_unique<process::ChildProcess>(argv, Options(stderr_path))),
      stderr_path_(stderr_path) {}

CellProcess::CellProcess(const std::function<int()>& body, const std::string& stderr_path)
    : child_(std::make_unique<process::ChildProcess>(body, Options(stderr_path))),
      stderr_path_(stderr_path) {}

CellExit CellProcess::Wait(double timeout_seconds,
                           const std::function<void(const std::string&)>& on_line,
                           const std::function<bool()>& stop_requested) {
  CellExit result;
  const auto start = std::chrono::steady_clock::now();
  std::string pending;
  bool open_pipe = true;
  std::optional<process::ExitStatus> status;
  while (true) {
    if (open_pipe) {
      pollfd fd{child_->stdout_fd(), POLLIN, 0};
      if (poll(&fd, 1, kPollMilliseconds) > 0) {
        char buffer[4096];
        const ssize_t n = read(child_->stdout_fd(), buffer, sizeof buffer);
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
    status = child_->Poll();
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (status) break;
    const bool timed_out = timeout_seconds > 0 && result.seconds > timeout_seconds;
    const bool stopping = stop_requested && stop_requested();
    if (timed_out || stopping) {
      child_->Stop(kKillGraceSeconds);
      result.kind = timed_out ? CellExitKind::kTimedOut : CellExitKind::kInterrupted;
      result.stderr_tail = process::FileTail(stderr_path_, kStderrTailBytes);
      return result;
    }
  }
  result.max_rss_bytes = status->max_rss_bytes;
  if (status->signaled) {
    result.kind = CellExitKind::kSignaled;
    result.signal = status->signal;
  } else {
    result.kind = CellExitKind::kExited;
    result.code = status->code;
  }
  result.stderr_tail = process::FileTail(stderr_path_, kStderrTailBytes);
  return result;
}

}  // namespace memsweep::sweep
