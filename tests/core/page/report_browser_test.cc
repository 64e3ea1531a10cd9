// The HTML report opened as a person opens it: in a real browser (headless Chromium, Debian's
// `chromium`; tools/test installs it when missing). The page's own script records, once loaded,
// how many marks each chart drew with a size, how many resources were fetched and any script
// error; the test reads the rendered document back. Screenshots go to the build tree
// (report-screenshots/). Skipped, saying why, where no Chromium can be found.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/page/html_report.h"
#include "core/page/report_data.h"
#include "support/html_tables.h"
#include "support/report_db.h"
#include "support/results_db_fixtures.h"

namespace {

namespace fs = std::filesystem;
using namespace memsweep::testing_support;

// MEMSWEEP_CHROMIUM, or the first of Debian's and Google's names on PATH.
std::string FindChromium() {
  if (const char* chosen = std::getenv("MEMSWEEP_CHROMIUM"); chosen && *chosen) return chosen;
  const char* path = std::getenv("PATH");
  std::string folders = path ? path : "/usr/bin";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    size_t start = 0;
    while (start <= folders.size()) {
      const size_t end = std::min(folders.find(':', start), folders.size());
      const fs::path candidate = fs::path(folders.substr(start, end - start)) / name;
      if (!folders.substr(start, end - start).empty() && access(candidate.c_str(), X_OK) == 0) {
        return candidate.string();
      }
      start = end + 1;
    }
  }
  return "";
}

struct Browser {
  int exit_code = -1;
  std::string out, err;
};

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs Chromium headless on the page with `mode` (--dump-dom, --screenshot=...); its own
// profile folder, so that tests running at once do not share one.
Browser Open(const std::string& chromium, const fs::path& page, const std::string& mode,
             const fs::path& work) {
  const fs::path profile = work / ("profile-" + std::to_string(getpid()) + "-" +
                                   std::to_string(std::hash<std::string>{}(mode)));
  const std::string command =
      "'" + chromium + "' --headless --no-sandbox --disable-gpu --no-first-run " +
      "--disable-background-networking --disable-component-update --disable-sync " +
      "--hide-scrollbars --enable-logging=stderr --v=0 --user-data-dir='" + profile.string() +
      "' " + mode + " 'file://" + page.string() + "' > '" + (work / "out.txt").string() +
      "' 2> '" + (work / "err.txt").string() + "'";
  const int status = std::system(command.c_str());
  Browser browser;
  browser.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  browser.out = ReadAll(work / "out.txt");
  browser.err = ReadAll(work / "err.txt");
  fs::remove_all(profile);
  return browser;
}

std::string Attribute(const std::string& tag, const std::string& name) {
  return ParseAttributes(tag)[name];
}

TEST(ReportBrowserTest, LoadsWithoutErrorsOrFetchesAndDrawsEveryChart) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "no Chromium found (chromium, chromium-browser or google-chrome on PATH, "
                    "or MEMSWEEP_CHROMIUM): tools/test installs Debian's chromium package";
  }
  const std::string db_path = FreshDbPath();
  BuildReportDb(db_path);
  const fs::path work = fs::path(db_path).parent_path();
  const fs::path page = work / "report.html";
  {
    memsweep::results::ResultsDb db(db_path, memsweep::results::ResultsDb::Mode::kReadOnly);
    memsweep::page::WriteReport(
        memsweep::page::HtmlReport(memsweep::page::LoadReports(db, {}), {.db_path = db_path}),
        page.string());
  }

  const Browser dom = Open(chromium, page, "--dump-dom", work);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  const size_t html_tag = dom.out.find("<html");
  ASSERT_NE(html_tag, std::string::npos) << dom.out.substr(0, 500) << dom.err;
  const std::string root = dom.out.substr(html_tag, dom.out.find('>', html_tag) - html_tag);
  EXPECT_EQ(Attribute(root, "data-ready"), "1") << "the page's load handler did not run";
  EXPECT_EQ(Attribute(root, "data-resources"), "0") << "the page fetched something";
  EXPECT_EQ(Attribute(root, "data-errors"), "") << "script errors";
  // Console messages (errors, CSP violations) are logged as CONSOLE lines.
  EXPECT_EQ(dom.err.find(":CONSOLE"), std::string::npos) << dom.err;

  size_t charts = 0;
  for (size_t at = dom.out.find("<svg class=\"chart\""); at != std::string::npos;
       at = dom.out.find("<svg class=\"chart\"", at + 1)) {
    const std::string tag = dom.out.substr(at, dom.out.find('>', at) - at);
    const std::string id = Attribute(tag, "id");
    const std::string visible = Attribute(tag, "data-visible");
    ASSERT_NE(visible, "") << id << ": not measured by the page's script";
    EXPECT_GT(std::stoi(visible), 0) << id;
    EXPECT_EQ(Attribute(tag, "data-drawn"), visible) << id << ": marks drawn with no size";
    ++charts;
  }
  // study: breakdown, pareto, timeline, loss, effects, ranks; steps: ablation, breakdown, pareto,
  // effects; study-gpu: breakdown, pareto, timeline, loss.
  EXPECT_EQ(charts, 14u);

  const fs::path shots = fs::path(MEMSWEEP_BUILD_DIR) / "report-screenshots";
  fs::create_directories(shots);
  const fs::path shot = shots / "report-test.png";
  fs::remove(shot);
  const Browser picture =
      Open(chromium, page, "--window-size=1280,6000 --screenshot='" + shot.string() + "'", work);
  EXPECT_EQ(picture.exit_code, 0) << picture.err;
  ASSERT_TRUE(fs::exists(shot)) << picture.err;
  EXPECT_GT(fs::file_size(shot), 50000u);  // a page of charts, not a blank one
}

// At a 1,400 px wide window every table of the page fits it: the page's script records how far
// each table's box scrolls (data-overflow), and none does — the cells table's estimate columns
// and errors included (they ran off the right edge at 1,180 px with full column names as
// headings). Screenshot: report-screenshots/report-1400.png.
TEST(ReportBrowserTest, EveryTableFitsA1400PixelWindow) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "no Chromium found (chromium, chromium-browser or google-chrome on PATH, "
                    "or MEMSWEEP_CHROMIUM): tools/test installs Debian's chromium package";
  }
  const std::string db_path = FreshDbPath();
  BuildReportDb(db_path);
  const fs::path work = fs::path(db_path).parent_path();
  const fs::path page = work / "report.html";
  {
    memsweep::results::ResultsDb db(db_path, memsweep::results::ResultsDb::Mode::kReadOnly);
    memsweep::page::WriteReport(
        memsweep::page::HtmlReport(memsweep::page::LoadReports(db, {}), {.db_path = db_path}),
        page.string());
  }
  const Browser dom = Open(chromium, page, "--window-size=1400,900 --dump-dom", work);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  size_t boxes = 0, cells_tables = 0;
  for (size_t at = dom.out.find("<div class=\"scroll\""); at != std::string::npos;
       at = dom.out.find("<div class=\"scroll\"", at + 1)) {
    const std::string tag = dom.out.substr(at, dom.out.find('>', at) - at);
    const size_t table = dom.out.find("<table", at);
    const std::string source =
        Attribute(dom.out.substr(table, dom.out.find('>', table) - table), "data-source");
    EXPECT_EQ(Attribute(tag, "data-overflow"), "0") << "the " << source << " table";
    cells_tables += source == "cells";
    ++boxes;
  }
  EXPECT_EQ(cells_tables, 3u);
  EXPECT_GE(boxes, 6u);
  const fs::path shots = fs::path(MEMSWEEP_BUILD_DIR) / "report-screenshots";
  fs::create_directories(shots);
  const fs::path shot = shots / "report-1400.png";
  fs::remove(shot);
  const Browser picture =
      Open(chromium, page, "--window-size=1400,900 --screenshot='" + shot.string() + "'", work);
  EXPECT_EQ(picture.exit_code, 0) << picture.err;
  EXPECT_TRUE(fs::exists(shot)) << picture.err;
}

}  // namespace
