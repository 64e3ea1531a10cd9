// The one path from a command's body to memsweep's exit code: every subcommand (and main itself)
// runs through RunCommand, so that no exception reaches std::terminate.
//
//   AddCommand(app.add_subcommand("plan", "..."), exit_code, [&options] { return Plan(options); });
//
// - ConfigError (bad command line, experiment, cell or plugin input), DataError (the training
//   data) and ResultsError (the results database) print "error: <message>" and give
//   ExitCode::kInvalidInput;
// - any other exception prints "internal error: <message>" with a request to report it and gives
//   ExitCode::kInternalError.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

#include "core/cli/exit_code.h"

namespace memsweep::cli {

using CommandBody = std::function<ExitCode()>;

// Runs `body` and returns its exit code, or the code of the exception it threw (above), after
// printing the message to stderr.
ExitCode RunCommand(const CommandBody& body);

// Makes `body` the subcommand's action: when it runs, `exit_code` is set by RunCommand(body).
void AddCommand(CLI::App* command, ExitCode& exit_code, CommandBody body);

// When the first word of the command line names none of `app`'s commands, prints "error: unknown
// command 'WORD': the commands are ..." and returns true (main exits 2); CLI11 alone would say
// only "A subcommand is required".
bool RefuseUnknownCommand(CLI::App& app, int argc, char** argv);

// Throws ConfigError when MEMSWEEP_HOST_MEMORY is set to something that is no size (the
// commands that estimate host memory call it before they start anything).
void CheckHostMemorySetting();

}  // namespace memsweep::cli
