#include "core/cli/command.h"

#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/config/config_error.h"
#include "core/memory/rss.h"
#include "core/results/results_error.h"
#include "memsweep/data_error.h"

namespace memsweep::cli {

ExitCode RunCommand(const CommandBody& body) {
  try {
    return body();
  } catch (const config::ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return ExitCode::kInvalidInput;
  } catch (const results::ResultsError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return ExitCode::kInvalidInput;
  } catch (const data::DataError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return ExitCode::kInvalidInput;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what()
              << "\n(a bug in memsweep: please report it with the command that gave it)\n";
  } catch (...) {
    std::cerr << "internal error: an exception that is not a std::exception"
              << "\n(a bug in memsweep: please report it with the command that gave it)\n";
  }
  return ExitCode::kInternalError;
}

void AddCommand(CLI::App* command, ExitCode& exit_code, CommandBody body) {
  command->callback([&exit_code, body = std::move(body)] { exit_code = RunCommand(body); });
}

bool RefuseUnknownCommand(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  const std::string word = argv[1];
  std::string names;
  bool known = false;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    known = known || command->get_name() == word;
    names += (names.empty() ? "" : ", ") + command->get_name();
  }
  if (known) return false;
  std::cerr << "error: unknown command '" << word << "': the commands are " << names
            << " (memsweep --help describes them)\n";
  return true;
}

void CheckHostMemorySetting() {
  try {
    memory::HostAvailableBytes();
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError(e.what());
  }
}

}  // namespace memsweep::cli
