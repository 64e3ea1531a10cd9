// CellProcess: one experiment cell running in a child process, so that an abort, a segfault or
// a hang in the cell never takes the sweep down. The child is either a new memsweep process in
// worker mode (fork + exec: a fresh process, its libraries loaded anew) or a fork of the runner
// that runs the worker's code directly (no exec: LibTorch and the plugins are already loaded,
// so the cell starts in milliseconds; the runner must be single-threaded, ForkIsSafe).
//
// The child dies with its parent (PR_SET_PDEATHSIG), so killing the runner never leaves
// orphaned workers. Its stdout carries progress lines; its stderr is kept in a file so that a
// crash can be reported with the child's last words.
//
//   CellProcess child({"/proc/self/exe", "worker", "--cell", path, "--result", out}, stderr_path);
//   CellProcess forked([&] { return RunWorker(files); }, stderr_path);  // exit code of the body
//   CellExit exit = child.Wait(timeout_seconds, [](const std::string& line) { ... });
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/process/child_process.h"

namespace memsweep::sweep {

enum class CellExitKind : uint8_t {
  kExited,    // exited normally with `code`
  kSignaled,  // killed by `signal` (abort, segfault ...)
  kTimedOut,  // ran past its time limit and was killed
  kInterrupted,  // the runner was asked to stop (Ctrl-C) and killed it
};

struct CellExit {
  CellExitKind kind = CellExitKind::kExited;
  int code = 0;
  int signal = 0;
  double seconds = 0.0;
  std::string stderr_tail;  // the last lines the child wrote to stderr
  int64_t max_rss_bytes = 0;  // the child's peak resident set (ru_maxrss); 0 when unknown
  std::string Describe() const;  // "exit code 1", "crashed: signal 6 (Aborted)", ...
};

class CellProcess {
 public:
  // fork + exec of argv.
  CellProcess(const std::vector<std::string>& argv, const std::string& stderr_path);
  // fork only: the child runs `body` and exits with its return value (1 if it throws).
  CellProcess(const std::function<int()>& body, const std::string& stderr_path);
  CellProcess(const CellProcess&) = delete;
  CellProcess& operator=(const CellProcess&) = delete;

  // Waits for the child, passing each stdout line to `on_line`. Kills it (SIGTERM, then SIGKILL
  // after a grace period) when `timeout_seconds` pass or `stop_requested()` turns true.
  CellExit Wait(double timeout_seconds, const std::function<void(const std::string&)>& on_line,
                const std::function<bool()>& stop_requested);
  pid_t pid() const { return child_->pid(); }

 private:
  static process::ChildOptions Options(const std::string& stderr_path);
  std::unique_ptr<process::ChildProcess> child_;
  std::string stderr_path_;
};

// How many processes the kernel's OOM killer has ended on this machine since it booted (the
// oom_kill line of /proc/vmstat, Linux >= 4.13), or -1 when unknown. Read before and after a cell
// it says whether the OOM killer ran meanwhile.
int64_t KernelOomKills();

// The path of the running memsweep binary (/proc/self/exe).
std::string SelfExecutable();

using process::ForkIsSafe;

}  // namespace memsweep::sweep
