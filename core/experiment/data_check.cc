#include "core/experiment/data_check.h"

#include <filesystem>
#include <set>
#include <tuple>

#include "core/config/run_config_loader.h"
#include "core/data/document_source.h"
#include "core/data/token_cache.h"

namespace memsweep::experiment {
namespace {

// What the documents of a source depend on: the file and how its lines are read.
using SourceKey = std::tuple<std::string, data::DataFormat, std::string, data::TrainOn>;

// Whether the token cache holds this corpus (its key covers the file's size and modification
// time): its cells read the ids from there, and the corpus was read without error to write them.
bool TokenCacheHolds(const data::DataConfig& source) {
  const std::string key = data::TokenCacheKey(source);
  if (key.empty()) return false;
  std::error_code error;
  return std::filesystem::is_regular_file(data::TokenCacheFile(key), error);
}

}  // namespace

ExperimentPlan LoadRunnablePlan(const std::string& path,
                                const std::vector<std::string>& overrides,
                                config::ReadFor purpose) {
  return LoadRunnablePlan(path, overrides, purpose, nullptr);
}

ExperimentPlan LoadRunnablePlan(const std::string& path, const std::vector<std::string>& overrides,
                                config::ReadFor purpose, std::vector<config::ValidatedRun>* runs) {
  // Collected while each cell is validated (once), read after every cell has passed.
  std::set<SourceKey> seen;
  std::vector<data::DataConfig> sources;  // in the order the cells first name them
  if (runs != nullptr) runs->clear();
  const auto validate = [&seen, &sources, purpose, runs](const Cell& cell) {
    config::ValidatedRun run = config::ValidatedRunFromTable(cell.document, cell.source, purpose);
    const data::DataConfig source = run.config.data;
    // Cells are validated in order, and a plan with a bad cell is refused: one run per cell.
    if (runs != nullptr) runs->push_back(std::move(run));
    if (source.format == data::DataFormat::kTokens) return;  // read by the validation itself
    const SourceKey key{source.path, source.format, source.text_field, source.train_on};
    if (seen.insert(key).second) sources.push_back(source);
  };
  ExperimentPlan plan = LoadExperimentPlan(path, overrides, validate);
  for (const data::DataConfig& source : sources) {
    if (TokenCacheHolds(source)) continue;
    data::CheckDocuments(source);
  }
  return plan;
}

}  // namespace memsweep::experiment
