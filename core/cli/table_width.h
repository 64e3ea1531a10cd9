// How wide the tables of `compare`, `query` and `run` may be, and the options that change it:
// --wide (every column, as FormatTable prints it) and --columns a,b,c (exactly these).
//
//   TableWidthOptions width;
//   AddTableWidthOptions(command, width);
//   ... results::FitOptions fit{.width = OutputColumns(), .columns = width.columns};
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace memsweep::cli {

struct TableWidthOptions {
  bool wide = false;                 // --wide: every column, nothing shortened or wrapped
  std::vector<std::string> columns;  // --columns a,b,c: exactly these, in this order
};

// Adds --wide and --columns (which exclude each other) to `command`.
void AddTableWidthOptions(CLI::App* command, TableWidthOptions& options);

// COLUMNS when it is set to a whole number from kMinColumns to kMaxColumns; else the width of
// stdout when stdout is a terminal (TIOCGWINSZ); else results::kDefaultTableWidth (100).
size_t OutputColumns();

inline constexpr size_t kMinColumns = 20;
inline constexpr size_t kMaxColumns = 100000;

}  // namespace memsweep::cli
