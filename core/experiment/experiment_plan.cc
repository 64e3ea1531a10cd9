#include "core/experiment/experiment_plan.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include "core/config/config_error.h"
#include "core/config/dotted_keys.h"
#include "core/config/run_config.h"
#include "core/config/run_config_loader.h"
#include "core/config/toml_overrides.h"
#include "core/config/toml_reader.h"
#include "core/experiment/cell_selector.h"
#include "core/experiment/matrix.h"
#include "core/experiment/matrix_overrides.h"

namespace memsweep::experiment {
namespace {

using config::ConfigError;
using config::FindAtPath;
using config::Where;

// One parse of the file with the overrides applied, and its matrix.
struct Document {
  toml::table root;
  MatrixSpec spec;
};

Document ReadDocument(std::string_view text, const std::string& source,
                      const std::vector<std::string>& overrides) {
  Document document;
  document.root = config::ParseToml(text, source);
  for (const std::string& assignment : overrides) {
    if (!ApplyMatrixOverride(document.root, assignment, source)) {
      config::ApplyOverride(document.root, assignment);
    }
  }
  document.spec = ReadMatrix(document.root, source, overrides);
  return document;
}

// Every cell is built from a fresh parse, so that each value keeps its file position and
// messages about a cell point at the line that set the value.
toml::table BuildCombination(std::string_view text, const std::string& source,
                             const std::vector<std::string>& overrides,
                             const Combination& combination) {
  Document document = ReadDocument(text, source, overrides);
  AssignCombination(document.root, document.spec, combination, source);
  return std::move(document.root);
}

int64_t ReadExperimentInteger(const toml::table& root, const char* key, int64_t fallback,
                              int64_t minimum, const std::string& source) {
  const toml::node* node = FindAtPath(root, std::string("experiment.") + key);
  if (node == nullptr) return fallback;
  if (!node->is_integer() || node->as_integer()->get() < minimum) {
    throw ConfigError(Where(source, node->source()) + "[experiment] " + key +
                      " must be an integer of at least " + std::to_string(minimum));
  }
  return node->as_integer()->get();
}

std::string ExperimentName(const toml::table& root) {
  const toml::node* node = FindAtPath(root, "experiment.name");
  if (node != nullptr && node->is_string()) return node->as_string()->get();
  return config::ExperimentSection{}.name;
}

std::vector<std::string> VaryingKeys(const MatrixSpec& spec) {
  std::vector<std::string> keys;
  for (const MatrixAxis& axis : spec.axes) keys.push_back(axis.key);
  for (const MatrixEntry& entry : spec.includes) {
    for (const MatrixItem& item : entry.items) {
      if (std::find(keys.begin(), keys.end(), item.key) == keys.end()) keys.push_back(item.key);
    }
  }
  if (!spec.ablation.empty()) keys.push_back("ablation");
  return keys;
}

// The matrix values of a combination; an ablation cell is labelled by its variant ("+bf16"), not
// by every key its steps set (those are in the cell's document).
nlohmann::json CombinationParams(const MatrixSpec& spec, const Combination& combination) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [key, ref] : combination.values) {
    if (ref.origin != ValueRef::Origin::kAblation) params[key] = ValueOf(spec, ref);
  }
  if (!combination.ablation.empty()) params["ablation"] = combination.ablation;
  return params;
}

// The cells of one combination: one per repeat, seeds seed + r.
void AddCells(std::string_view text, const std::string& source,
              const std::vector<std::string>& overrides, const MatrixSpec& spec,
              const Combination& combination, int64_t combination_index, std::vector<Cell>& cells) {
  nlohmann::json params = CombinationParams(spec, combination);
  toml::table document = BuildCombination(text, source, overrides, combination);
  const int64_t repeats = ReadExperimentInteger(document, "repeats", 1, 1, source);
  const int64_t seed = ReadExperimentInteger(
      document, "seed", static_cast<int64_t>(config::ExperimentSection{}.seed), 0, source);
  for (int64_t r = 0; r < repeats; ++r) {
    if (r > 0) document = BuildCombination(text, source, overrides, combination);
    if (seed > std::numeric_limits<int64_t>::max() - r) {
      throw ConfigError(source + ": [experiment] seed " + std::to_string(seed) + " + repeat " +
                        std::to_string(r) + " does not fit a 64-bit integer; lower the seed");
    }
    toml::table* experiment = document["experiment"].as_table();
    if (experiment == nullptr) {
      document.insert_or_assign("experiment", toml::table{});
      experiment = document["experiment"].as_table();
    }
    experiment->insert_or_assign("seed", seed + r);
    experiment->erase("repeats");
    experiment->erase("reference");  // a plan-level key: which cell the others are verified against
    Cell cell;  // moved, never copied: copies of TOML nodes lose their file positions
    cell.index = static_cast<int64_t>(cells.size());
    cell.combination = combination_index;
    cell.repeat = r;
    cell.seed = static_cast<uint64_t>(seed + r);
    cell.source = source;
    cell.params = params;
    cell.document = std::move(document);
    cell.hash = CellHash(cell.document);
    cells.push_back(std::move(cell));
  }
}

void CheckDistinct(const std::vector<Cell>& cells, const MatrixSpec& spec,
                   const std::string& source) {
  std::map<std::string, const Cell*> seen;
  for (const Cell& cell : cells) {
    auto [it, inserted] = seen.emplace(cell.hash, &cell);
    if (inserted) continue;
    throw ConfigError(Where(source, spec.where) + it->second->Describe() + " and " +
                      cell.Describe() + " are the same run (hash " + cell.hash +
                      "); remove the repeated matrix value or include entry");
  }
}

std::string DescribeCombinations(const std::vector<Cell>& cells, const std::vector<int64_t>& which) {
  std::string out;
  for (int64_t combination : which) {
    for (const Cell& cell : cells) {
      if (cell.combination != combination) continue;
      const std::string label = cell.Label();
      out += (out.empty() ? "" : "; ") + std::string("cell ") + std::to_string(cell.index) +
             (label.empty() ? "" : " (" + label + ")");
      break;
    }
  }
  return out;
}

// Reads [experiment] reference, finds the one combination it names and points every cell at the
// reference combination's cell with the same repeat (or its first, when it has fewer repeats).
void ResolveReference(const toml::table& root, const std::string& source, ExperimentPlan& plan) {
  const toml::node* node = FindAtPath(root, "experiment.reference");
  if (node == nullptr) return;
  const std::string where = Where(source, node->source()) + "[experiment] reference";
  if (!node->is_string()) {
    throw ConfigError(where + " must be a string of key=value pairs naming one cell, e.g. "
                              "reference = \"strategies.checkpointing.plugin=none\"");
  }
  plan.reference = node->as_string()->get();
  CellSelector selector;
  try {
    selector = ParseCellSelector(plan.reference);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(where + " " + e.what());
  }
  for (const auto& [key, value] : selector.pairs) {
    bool known = false;
    for (const Cell& cell : plan.cells) known = known || FindParam(cell.params, key) != nullptr;
    if (known) continue;
    std::string keys;
    for (const std::string& varying : plan.varying_keys) keys += (keys.empty() ? "" : ", ") + varying;
    throw ConfigError(where + " '" + plan.reference + "': no cell has a parameter '" + key +
                      "'; name matrix keys (" + (keys.empty() ? "this file has no [matrix]" : keys) +
                      ")");
  }
  std::vector<int64_t> matches;
  for (const Cell& cell : plan.cells) {
    if (!selector.Matches(cell.params)) continue;
    if (matches.empty() || matches.back() != cell.combination) matches.push_back(cell.combination);
  }
  if (matches.empty()) {
    throw ConfigError(where + " '" + plan.reference + "' matches no cell; the cells are: " +
                      DescribeCombinations(plan.cells, [&plan] {
                        std::vector<int64_t> all;
                        for (const Cell& cell : plan.cells) {
                          if (all.empty() || all.back() != cell.combination) {
                            all.push_back(cell.combination);
                          }
                        }
                        return all;
                      }()));
  }
  if (matches.size() > 1) {
    throw ConfigError(where + " '" + plan.reference + "' matches " +
                      std::to_string(matches.size()) + " cells (" +
                      DescribeCombinations(plan.cells, matches) +
                      "); add key=value pairs until it names one");
  }
  plan.reference_combination = matches.front();
  std::map<int64_t, std::string> reference_by_repeat;
  for (const Cell& cell : plan.cells) {
    if (cell.combination == matches.front()) reference_by_repeat.emplace(cell.repeat, cell.hash);
  }
  for (Cell& cell : plan.cells) {
    const auto it = reference_by_repeat.find(cell.repeat);
    cell.reference_hash =
        it != reference_by_repeat.end() ? it->second : reference_by_repeat.begin()->second;
  }
}

// The errors of a plan's cells, thrown together as a compiler reports them: one line per
// distinct message, naming its cell (and the other cells that share it: a mistake outside the
// matrix is in every cell), the first kMaxCellErrors messages, then how many more there are.
class CellErrors {
 public:
  void Add(const std::string& message, int64_t cell, const std::string& described) {
    for (Group& group : groups_) {
      if (group.message != message) continue;
      group.cells.push_back(cell);
      return;
    }
    groups_.push_back({message, described, {cell}});
  }
  void ThrowIfAny() const {
    if (groups_.empty()) return;
    std::string text;
    for (size_t g = 0; g < groups_.size() && g < kMaxCellErrors; ++g) {
      const Group& group = groups_[g];
      text += (text.empty() ? "" : "\n") + group.message + "; in ";
      text += group.described;
      if (group.cells.size() == 1) continue;
      text += group.cells.size() == 2 ? " and cell " : " and cells ";
      for (size_t i = 1; i < group.cells.size() && i <= kMaxCellErrors; ++i) {
        text += (i == 1 ? "" : ", ") + std::to_string(group.cells[i]);
      }
      if (group.cells.size() > kMaxCellErrors + 1) {
        text += " and " + std::to_string(group.cells.size() - kMaxCellErrors - 1) + " more";
      }
    }
    if (groups_.size() > kMaxCellErrors) {
      const size_t more = groups_.size() - kMaxCellErrors;
      text += "\nand " + std::to_string(more) + " more " + (more == 1 ? "error" : "errors");
    }
    throw ConfigError(text);
  }

 private:
  struct Group {
    std::string message;    // without the cell
    std::string described;  // its first cell, as Cell::Describe says
    std::vector<int64_t> cells;
  };
  std::vector<Group> groups_;
};

}  // namespace

void ValidateCellAsRun(const Cell& cell) { config::RunConfigFromTable(cell.document, cell.source); }

ExperimentPlan ParseExperimentPlan(std::string_view text, const std::string& source,
                                   const std::vector<std::string>& overrides,
                                   const CellValidator& validate) {
  const Document base = ReadDocument(text, source, overrides);
  const std::vector<Combination> combinations = ExpandMatrix(base.spec, source);
  ExperimentPlan plan;
  plan.name = ExperimentName(base.root);
  plan.source = source;
  plan.file_text = std::string(text);
  plan.combinations = static_cast<int64_t>(combinations.size());
  plan.varying_keys = VaryingKeys(base.spec);
  // Every bad cell is reported, as a compiler reports every error: the plan is refused once all
  // were looked at.
  CellErrors errors;
  size_t unbuilt = 0;  // combinations whose cells could not be built: one cell number each
  for (size_t c = 0; c < combinations.size(); ++c) {
    const size_t first = plan.cells.size();
    try {
      AddCells(text, source, overrides, base.spec, combinations[c], static_cast<int64_t>(c),
               plan.cells);
    } catch (const ConfigError& e) {
      plan.cells.resize(first);  // none of the combination's cells
      Cell failed;
      failed.index = static_cast<int64_t>(first + unbuilt++);
      failed.params = CombinationParams(base.spec, combinations[c]);
      const std::string label = failed.Label();
      errors.Add(e.what(), failed.index,
                 "cell " + std::to_string(failed.index) + (label.empty() ? "" : " (" + label + ")"));
    }
  }
  errors.ThrowIfAny();  // the checks below compare whole cells
  CheckDistinct(plan.cells, base.spec, source);
  ResolveReference(base.root, source, plan);
  for (const Cell& cell : plan.cells) {
    try {
      validate(cell);
    } catch (const ConfigError& e) {
      errors.Add(e.what(), cell.index, cell.Describe());
    }
  }
  errors.ThrowIfAny();
  return plan;
}

ExperimentPlan LoadExperimentPlan(const std::string& path,
                                  const std::vector<std::string>& overrides,
                                  const CellValidator& validate) {
  return ParseExperimentPlan(config::ReadExperimentFile(path), path, overrides, validate);
}

}  // namespace memsweep::experiment
