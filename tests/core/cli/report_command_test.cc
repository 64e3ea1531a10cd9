// `memsweep report` as a user runs it: the page it writes, and bad input that writes nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/results/sqlite_handles.h"
#include "support/cli_runner.h"
#include "support/report_db.h"
#include "support/results_db_fixtures.h"

namespace {

using namespace memsweep::testing_support;
namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ReportCommandTest, WritesOnePageBesideTheDatabase) {
  const std::string db = FreshDbPath();
  BuildReportDb(db);
  auto out = RunMemsweep("report --db " + db);
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const fs::path page = fs::path(db).parent_path() / "report.html";
  EXPECT_NE(out.output.find("report: " + page.string() + " (3 experiments"), std::string::npos)
      << out.output;
  const std::string html = ReadFile(page);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_NE(html.find("<h2>study-gpu</h2>"), std::string::npos);

  const fs::path chosen = fs::path(db).parent_path() / "one.html";
  out = RunMemsweep("report --db " + db + " --experiment steps -o " + chosen.string());
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const std::string one = ReadFile(chosen);
  EXPECT_NE(one.find("<h2>steps</h2>"), std::string::npos);
  EXPECT_EQ(one.find("<h2>study</h2>"), std::string::npos);
}

TEST(ReportCommandTest, BadInputExitsTwoAndWritesNothing) {
  const std::string db = FreshDbPath();
  BuildReportDb(db);
  const fs::path folder = fs::path(db).parent_path();
  const fs::path page = folder / "page.html";

  auto out = RunMemsweep("report --db " + db + " --experiment nope -o " + page.string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("no experiment named or numbered \"nope\"; the database holds: "
                            "study (1), steps (2), study-gpu (3)"),
            std::string::npos)
      << out.output;

  out = RunMemsweep("report --db " + db + " -o " + (folder / "missing" / "page.html").string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("does not exist; create it or choose another -o"), std::string::npos)
      << out.output;
  EXPECT_FALSE(fs::exists(folder / "missing"));

  fs::create_directories(folder / "a-folder");
  out = RunMemsweep("report --db " + db + " -o " + (folder / "a-folder").string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_TRUE(fs::is_empty(folder / "a-folder"));

  out = RunMemsweep("report --db " + (folder / "none.db").string() + " -o " + page.string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_FALSE(fs::exists(folder / "none.db"));

  {
    memsweep::results::SqliteConnection newer(db, memsweep::results::SqliteConnection::Access::kReadWrite);
    newer.Execute("PRAGMA user_version = 999");
  }
  out = RunMemsweep("report --db " + db + " -o " + page.string());
  EXPECT_EQ(out.exit_code, 2) << out.output;
  EXPECT_NE(out.output.find("is newer than this memsweep knows"), std::string::npos) << out.output;

  EXPECT_FALSE(fs::exists(page));
  // Nothing half-written either: only the database's own files are in the folder.
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name.starts_with("memsweep.db") || name == "a-folder") << name;
  }
}

}  // namespace
