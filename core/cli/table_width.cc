#include "core/cli/table_width.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "core/results/table_fit.h"

namespace memsweep::cli {
namespace {

// COLUMNS as a width, 0 when unset or not a whole number in range.
size_t ColumnsVariable() {
  const char* text = std::getenv("COLUMNS");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || *text == '-' || *text == '+' || value < kMinColumns || value > kMaxColumns) {
    return 0;
  }
  return static_cast<size_t>(value);
}

}  // namespace

void AddTableWidthOptions(CLI::App* command, TableWidthOptions& options) {
  CLI::Option* wide = command->add_flag(
      "--wide", options.wide,
      "Every column, whatever the width (default: fit the terminal, or 100 columns)");
  command
      ->add_option("--columns", options.columns,
                   "Exactly these columns, in this order: a,b,c (names as --wide shows them)")
      ->delimiter(',')
      ->excludes(wide);
}

size_t OutputColumns() {
  if (const size_t columns = ColumnsVariable(); columns != 0) return columns;
  winsize size{};
  if (isatty(STDOUT_FILENO) != 0 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 &&
      size.ws_col > 0) {
    return size.ws_col;
  }
  return results::kDefaultTableWidth;
}

}  // namespace memsweep::cli
