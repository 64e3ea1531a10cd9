#include "core/cli/command.h"

#include <iostream>
#include <stdexcept>
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

void CheckHostMemorySetting() {
  try {
    memory::HostAvailableBytes();
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError(e.what());
  }
}

}  // namespace memsweep::cli
