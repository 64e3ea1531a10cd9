// core/'s folders form layers, and a file includes only folders of lower layers (README,
// "Layout"): cli on top, then what runs sweeps, ranks and results, the trainer, the
// communicators, configuration and plugins, the SDK's implementation, the model, data, memory
// and process basics, and the environment at the bottom. Reads every source of core/ and names
// each include that points up or sideways; a new folder must be given a layer here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace memsweep {
namespace {

namespace fs = std::filesystem;

// Top to bottom; folders of one layer include none of each other.
const std::vector<std::vector<std::string>> kLayers = {
    {"cli"},
    {"sweep"},
    {"launch"},
    {"page"},        // the HTML report of a results database (memsweep report)
    {"results"},
    {"run_files"},   // a run's own files: its result JSON and summary text
    {"estimate"},    // a cell's memory from its training loop on the meta device
    {"experiment"},
    {"train"},
    {"comm"},        // what talks between ranks: process groups, collectives
    {"config"},
    {"plugin"},
    {"sdk"},         // the SDK's own .cc files (its headers: core/include/memsweep/)
    {"model", "data", "memory", "process"},
    {"env"},
};
const std::set<std::string> kNotFolders = {"include", "cmake"};

std::map<std::string, int> LayerOfFolder() {
  std::map<std::string, int> layer;
  for (size_t i = 0; i < kLayers.size(); ++i) {
    for (const std::string& folder : kLayers[i]) layer[folder] = static_cast<int>(i);
  }
  return layer;
}

const fs::path kCore = fs::path(MEMSWEEP_SOURCE_DIR) / "core";

TEST(CoreLayering, EveryFolderOfCoreHasALayer) {
  const auto layer = LayerOfFolder();
  for (const auto& entry : fs::directory_iterator(kCore)) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    if (kNotFolders.count(name) != 0) continue;
    EXPECT_TRUE(layer.count(name) != 0)
        << "core/" << name << "/ has no layer: add it to kLayers (tests/core/layering_test.cc) "
        << "and to the README's layout";
  }
}

TEST(CoreLayering, EveryIncludePointsDown) {
  const auto layer = LayerOfFolder();
  const std::regex include(R"re(^\s*#\s*include\s*"core/([a-z_]+)/)re");
  std::vector<std::string> wrong;
  size_t includes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kCore)) {
    const fs::path& path = entry.path();
    if (!entry.is_regular_file() || (path.extension() != ".cc" && path.extension() != ".h")) {
      continue;
    }
    const std::string folder = fs::relative(path, kCore).begin()->string();
    std::ifstream in(path);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::smatch match;
      if (!std::regex_search(line, match, include)) continue;
      ++includes;
      const std::string target = match[1];
      if (target == folder) continue;
      const std::string where = fs::relative(path, kCore.parent_path()).string() + ":" +
                                std::to_string(number) + ": " + line;
      if (folder == "include") {
        wrong.push_back(where + "  (the SDK's headers include no core/ header)");
      } else if (layer.count(folder) == 0 || layer.count(target) == 0) {
        continue;  // EveryFolderOfCoreHasALayer names it
      } else if (layer.at(target) <= layer.at(folder)) {
        wrong.push_back(where + "  (" + folder + " may include only lower layers)");
      }
    }
  }
  EXPECT_GT(includes, 100u) << "read no includes under " << kCore;
  std::string all;
  for (const std::string& w : wrong) all += "\n  " + w;
  EXPECT_TRUE(wrong.empty()) << wrong.size() << " includes against the layering:" << all;
}

}  // namespace
}  // namespace memsweep
