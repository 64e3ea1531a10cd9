// The HTML report of a results database (memsweep report): one self-contained page — styles,
// script, SVG charts and data inline, nothing fetched when it opens (a Content-Security-Policy
// forbids it) — with a section per experiment. What it shows: docs/report.md.
//
//   ResultsDb db("results/memsweep.db", ResultsDb::Mode::kReadOnly);
//   WriteReport(HtmlReport(LoadReports(db, {}), {.db_path = db.path()}), "results/report.html");
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "core/page/report_data.h"

namespace memsweep::page {

struct PageInfo {
  std::string db_path;    // shown in the heading and in each section's query command
  std::string generated;  // when (UTC, ISO 8601); "" = now
};

std::string HtmlReport(const std::vector<ExperimentReport>& experiments, const PageInfo& info);

// The page cannot be written where asked (a missing folder, no permission, a full disk).
class ReportWriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes beside `path` and renames over it: a reader never sees half a page, and a failure
// leaves nothing behind. Throws ReportWriteError naming the path and what to do.
void WriteReport(const std::string& html, const std::string& path);

}  // namespace memsweep::page
