#include "core/cli/plan_command.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "core/cli/command.h"
#include "core/cli/count_text.h"
#include "core/cli/table_width.h"
#include "core/config/config_error.h"
#include "core/config/run_config_loader.h"
#include "core/config/strategy_resolver.h"
#include "core/experiment/cell.h"
#include "core/experiment/data_check.h"
#include "core/experiment/experiment_plan.h"
#include "core/results/table_fit.h"
#include "core/train/row_preview.h"
#include "core/train/stage_listing.h"

namespace memsweep::cli {
namespace {

// " x 2 repeats", or ", repeats vary" when the matrix varies experiment.repeats.
std::string RepeatsText(const experiment::ExperimentPlan& plan) {
  std::map<int64_t, int64_t> per_combination;
  for (const experiment::Cell& cell : plan.cells) ++per_combination[cell.combination];
  std::set<int64_t> counts;
  for (const auto& [combination, count] : per_combination) counts.insert(count);
  if (counts.size() != 1) return ", repeats vary";
  const int64_t repeats = *counts.begin();
  return " x " + std::to_string(repeats) + (repeats == 1 ? " repeat" : " repeats");
}

// "7,615,616,512 (7.62 B)": exact, then readable.
std::string CountText(int64_t n) {
  const std::string grouped = GroupDigits(n);
  std::ostringstream readable;
  readable << std::fixed << std::setprecision(2);
  if (n >= 1'000'000'000) {
    readable << static_cast<double>(n) / 1e9 << " B";
  } else if (n >= 1'000'000) {
    readable << static_cast<double>(n) / 1e6 << " M";
  } else {
    return grouped;
  }
  return grouped + " (" + readable.str() + ")";
}

// What plan says of one cell beyond its matrix values, from its validation.
struct CellFacts {
  std::pair<int64_t, int64_t> counts;  // (total, trainable) parameters, from the shapes
  std::string oom_before_run;          // config::ValidatedRun::oom_before_run
  std::string gpu_needed;              // a CUDA cell on a machine that cannot run it: why
  std::string short_rows;              // train::ShortRowsWarning of the rows it will train
};

// From the plan's own validation of each cell (`runs`, LoadRunnablePlan's): no plugin is
// created a second time.
std::vector<CellFacts> FactsOf(const std::vector<config::ValidatedRun>& runs) {
  std::vector<CellFacts> facts;
  for (const config::ValidatedRun& run : runs) {
    const train::RowLengths rows = train::PreviewRows(run.config, run.strategies);
    facts.push_back({{run.config.model.llama.ParameterCount(), run.adapter.trainable_params},
                     run.oom_before_run,
                     run.config.device.gpu_needed,
                     train::ShortRowsWarning(rows.mean, rows.longest, run.config.data.seq_len)});
  }
  return facts;
}

// What a reader must know of a cell before it runs: an oom before the first step (the run
// records it without training), rows well short of seq_len, a CUDA cell this machine cannot
// run. One line each; "" when none.
std::string NotesText(const experiment::ExperimentPlan& plan, const std::vector<CellFacts>& facts) {
  std::ostringstream out;
  for (size_t i = 0; i < facts.size(); ++i) {
    const int64_t index = plan.cells[i].index;
    if (!facts[i].oom_before_run.empty()) {
      out << "cell " << index << ": oom: " << facts[i].oom_before_run << "\n";
    }
    if (!facts[i].short_rows.empty()) out << "cell " << index << ": " << facts[i].short_rows << "\n";
    if (!facts[i].gpu_needed.empty()) {
      out << "cell " << index << ": needs a GPU to run ([device] type = \"cuda\"; here "
          << facts[i].gpu_needed << "); `memsweep estimate " << plan.source
          << "` estimates it on this machine\n";
    }
  }
  return out.str();
}

// "cells 0-3, 8" or "cell 5".
std::string CellsText(const std::vector<int64_t>& cells) {
  std::string names;
  for (size_t j = 0; j < cells.size();) {
    size_t k = j;
    while (k + 1 < cells.size() && cells[k + 1] == cells[k] + 1) ++k;
    names += (names.empty() ? "" : ", ") + std::to_string(cells[j]) +
             (k > j ? "-" + std::to_string(cells[k]) : "");
    j = k + 1;
  }
  return std::string(cells.size() == 1 ? "cell " : "cells ") + names;
}

// The model's parameters and how many train, from the shapes alone (the model is not built):
// one line when every cell agrees, else one per cell.
std::string ParametersText(const experiment::ExperimentPlan& plan,
                           const std::vector<CellFacts>& facts) {
  std::vector<std::pair<int64_t, int64_t>> counts;  // (total, trainable) per cell
  for (const CellFacts& f : facts) counts.push_back(f.counts);
  const auto line = [](std::pair<int64_t, int64_t> c) {
    std::ostringstream out;
    out << CountText(c.first) << " in the model, " << CountText(c.second) << " trainable";
    if (c.second != c.first && c.first > 0) {
      out << " (" << std::setprecision(3) << 100.0 * static_cast<double>(c.second) / c.first
          << " %)";
    }
    return out.str();
  };
  if (std::all_of(counts.begin(), counts.end(), [&](const auto& c) { return c == counts[0]; })) {
    return counts.empty() ? "-" : line(counts[0]);
  }
  // One line per distinct count, naming its cells as ranges ("cells 0-3, 8").
  std::vector<std::pair<std::pair<int64_t, int64_t>, std::vector<int64_t>>> groups;
  for (size_t i = 0; i < counts.size(); ++i) {
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const auto& g) { return g.first == counts[i]; });
    if (group == groups.end()) group = groups.insert(groups.end(), {counts[i], {}});
    group->second.push_back(plan.cells[i].index);
  }
  std::string text;
  for (const auto& [count, cells] : groups) {
    text += (text.empty() ? "" : "\n            ") + CellsText(cells) + ": " + line(count);
  }
  return text;
}

std::string FormatPlan(const experiment::ExperimentPlan& plan,
                       const std::vector<config::ValidatedRun>& runs) {
  const std::vector<CellFacts> facts = FactsOf(runs);
  std::ostringstream out;
  const int64_t cells = static_cast<int64_t>(plan.cells.size());
  out << "experiment  " << plan.name << "\n";
  out << "source      " << plan.source << "\n";
  out << "cells       " << cells << " (" << plan.combinations
      << (plan.combinations == 1 ? " combination" : " combinations") << RepeatsText(plan) << ")\n";
  std::string varying;
  for (const auto& key : plan.varying_keys) varying += (varying.empty() ? "" : ", ") + key;
  out << "varying     " << (varying.empty() ? "-" : varying) << "\n";
  out << "parameters  " << ParametersText(plan, facts) << "\n";
  if (plan.reference_combination) {
    for (const experiment::Cell& cell : plan.cells) {
      if (cell.combination != *plan.reference_combination) continue;
      out << "reference   cell " << cell.index << " (" << plan.reference
          << "): the other cells' losses are verified against it\n";
      break;
    }
  }
  out << "\n";
  size_t seed_width = 4;
  for (const experiment::Cell& cell : plan.cells) {
    seed_width = std::max(seed_width, std::to_string(cell.seed).size());
  }
  out << " cell  repeat  " << std::left << std::setw(static_cast<int>(seed_width)) << "seed"
      << "  hash              parameters\n";
  for (const experiment::Cell& cell : plan.cells) {
    const std::string label = cell.Label();
    out << std::right << std::setw(5) << cell.index << "  " << std::setw(6) << cell.repeat << "  "
        << std::left << std::setw(static_cast<int>(seed_width)) << cell.seed << "  "
        << std::setw(16) << cell.hash << "  " << (label.empty() ? "-" : label) << "\n";
  }
  const std::string notes = NotesText(plan, facts);
  if (!notes.empty()) out << "\n" << results::WrapText(notes, OutputColumns());
  return out.str();
}

// Every cell as DIR/cell<index>-<hash>.toml (the stem of the per-cell result files); returns
// the lines that list them.
std::string WriteCellFiles(const experiment::ExperimentPlan& plan, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw config::ConfigError(dir + ": cannot create the directory: " + error.message());
  std::ostringstream listing;
  listing << "\ncell files (run one with: memsweep worker --cell FILE --source " << plan.source
          << " --result out.json)\n";
  for (const experiment::Cell& cell : plan.cells) {
    const fs::path path =
        fs::path(dir) / ("cell" + std::to_string(cell.index) + "-" + cell.hash + ".toml");
    std::ofstream out(path);
    out << experiment::CellToToml(cell);
    out.close();
    if (!out) throw config::ConfigError(path.string() + ": cannot write the cell file");
    listing << std::right << std::setw(5) << cell.index << "  " << path.string() << "\n";
  }
  return listing.str();
}

// What runs at each stage of the chosen cells (all when `chosen` is empty); cells with the same
// listing share one. An index that is not a cell is an input error.
std::string StagesText(const experiment::ExperimentPlan& plan,
                       const std::vector<config::ValidatedRun>& runs,
                       const std::vector<int64_t>& chosen) {
  for (int64_t index : chosen) {
    const bool known = std::any_of(plan.cells.begin(), plan.cells.end(),
                                   [&](const experiment::Cell& c) { return c.index == index; });
    if (!known) {
      throw config::ConfigError(plan.source + ": --cell " + std::to_string(index) +
                                " is not a cell of this experiment (it has cells 0-" +
                                std::to_string(plan.cells.size() - 1) + ")");
    }
  }
  std::vector<std::pair<std::string, std::vector<int64_t>>> groups;  // listing, its cells
  for (size_t i = 0; i < plan.cells.size(); ++i) {
    const int64_t index = plan.cells[i].index;
    if (!chosen.empty() && std::find(chosen.begin(), chosen.end(), index) == chosen.end()) {
      continue;
    }
    const c10::DeviceType device =
        runs[i].config.device.type == "cuda" ? c10::kCUDA : c10::kCPU;
    const std::string text = train::FormatStages(train::ListStages(runs[i].strategies, device), OutputColumns());
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const auto& g) { return g.first == text; });
    if (group == groups.end()) group = groups.insert(groups.end(), {text, {}});
    group->second.push_back(index);
  }
  std::ostringstream out;
  for (const auto& [text, cells] : groups) {
    out << "\nstages of " << CellsText(cells)
        << " (begin and end: the strategies' hooks; host: the trainer, asking a slot)\n"
        << text;
  }
  return out.str();
}

ExitCode Plan(const PlanOptions& options) {
  config::RefuseFailedStartupPlugins();
  std::vector<config::ValidatedRun> runs;
  const experiment::ExperimentPlan plan =
      experiment::LoadRunnablePlan(options.file, options.overrides, config::ReadFor::kPlan, &runs);
  const std::string stages =
      options.stages ? StagesText(plan, runs, options.stage_cells) : std::string();
  std::cout << FormatPlan(plan, runs) << stages;
  if (!options.cells_dir.empty()) std::cout << WriteCellFiles(plan, options.cells_dir);
  return ExitCode::kOk;
}

}  // namespace

void AddPlanCommand(CLI::App& app, PlanOptions& options, ExitCode& exit_code) {
  CLI::App* plan =
      app.add_subcommand("plan", "List the cells of an experiment's matrix (validated, not run)");
  plan->add_option("file", options.file, "Experiment TOML file")->required();
  plan->add_option("--set", options.overrides, "Override a key: section.key=value (repeatable)");
  plan->add_option("--write-cells", options.cells_dir,
                   "Also write each cell as DIR/cell<index>-<hash>.toml, for memsweep worker");
  plan->add_flag("--stages", options.stages,
                 "Also list what runs at each stage of each cell: hooks and slot capabilities");
  plan->add_option("--cell", options.stage_cells, "With --stages: only this cell (repeatable)");
  AddCommand(plan, exit_code, [&options] { return Plan(options); });
}

}  // namespace memsweep::cli
