// memsweep's exit codes: the one table every command returns from (docs/cli.md, "Exit codes").
// Commands return an ExitCode from their body and run it through RunCommand
// (core/cli/command.h), which turns every exception into one of these.
#pragma once

namespace memsweep::cli {

enum class ExitCode : int {
  // Done. `run`: every cell ran (an OOM against the budget is a result); `worker`: the result was
  // written with status ok or oom.
  kOk = 0,
  // An exception nothing expected: a bug in memsweep (the message asks to report it).
  kInternalError = 1,
  // The input cannot be used: the command line, the experiment or cell file, a plugin library or
  // its parameters, the data, or the results database (not a database, cannot be opened, or it
  // stopped taking writes during a sweep). Nothing is run or written, except what a sweep had
  // recorded before its database failed (docs/cli.md).
  kInvalidInput = 2,
  // `run`: some cell failed (an error or a crash) or timed out; the others were recorded.
  // `worker`: the run failed; a result with status "failed" was written.
  kRunFailed = 3,
  // `run`: stopped by SIGINT or SIGTERM; the interrupted cell is back to pending.
  kInterrupted = 130,
};

constexpr int ToInt(ExitCode code) { return static_cast<int>(code); }

}  // namespace memsweep::cli
