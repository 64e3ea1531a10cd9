// ChildProcess: one child of this process — the sweep's cell workers and the launcher's ranks
// both start, watch and stop theirs through it. The child dies with its parent
// (PR_SET_PDEATHSIG); its stdout is inherited, discarded or piped to the parent; its stderr goes
// to a file, read back with FileTail when it ends. The child is either a new program (fork +
// exec of argv) or a fork running a function of this program (no exec: only safe while the
// parent has a single thread, ForkIsSafe).
//
//   ChildOptions options;
//   options.stdout_mode = ChildOptions::Stdout::kPipe;
//   options.stderr_path = "/tmp/cell.stderr";
//   ChildProcess child({"/proc/self/exe", "worker", ...}, options);
//   while (!child.Poll()) { ... read child.stdout_fd() ... }
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace memsweep::process {

struct ChildOptions {
  enum class Stdout { kInherit, kDiscard, kPipe };
  Stdout stdout_mode = Stdout::kInherit;
  std::string stderr_path;  // empty: inherit the parent's stderr
  std::vector<std::pair<std::string, std::string>> environment;  // set in the child
  bool ignore_sigint = false;  // Ctrl-C reaches the process group; the parent then stops it
};

struct ExitStatus {
  bool signaled = false;
  int code = 0;    // exit code (signaled == false)
  int signal = 0;  // the signal that ended it (signaled == true)
  // The child's peak resident set (the kernel's ru_maxrss), however it ended; 0 when unknown.
  int64_t max_rss_bytes = 0;
};

class ChildProcess {
 public:
  // fork + exec of argv (argv[0] a path).
  ChildProcess(const std::vector<std::string>& argv, const ChildOptions& options);
  // fork only: the child runs `body` and exits with its value (1, with the message on stderr,
  // if it throws). SIGTERM ends it even if this process handles SIGTERM itself.
  ChildProcess(const std::function<int()>& body, const ChildOptions& options);
  // A child still running is killed (SIGKILL) and reaped.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The read end of the child's stdout (Stdout::kPipe), else -1. Closed by the destructor.
  int stdout_fd() const { return stdout_fd_; }
  // The exit status once the child has ended (reaped then), without blocking.
  std::optional<ExitStatus> Poll();
  // SIGTERM, then SIGKILL if it has not ended after `grace_seconds`; reaps it.
  ExitStatus Stop(double grace_seconds);
  // SIGKILL and reap.
  ExitStatus Kill();

 private:
  void Start(const std::function<void()>& in_child, const ChildOptions& options);
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::optional<ExitStatus> status_;
};

// Whether this process may fork a child that goes on running its code: it has one thread (a
// forked child gets only the forking thread; an OpenMP pool or any other thread of the parent
// would be missing, with its locks possibly held).
bool ForkIsSafe();

// The last `max_bytes` of a file ("..." in front when cut), trailing blank lines removed.
std::string FileTail(const std::string& path, size_t max_bytes);

}  // namespace memsweep::process
