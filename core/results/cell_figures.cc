#include "core/results/cell_figures.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>

#include "core/experiment/cell_selector.h"

namespace memsweep::results {
namespace {

using nlohmann::json;

// Mean of the figure over the runs that have it; nullopt when none has.
std::optional<double> Mean(const std::vector<const RunFigures*>& runs,
                           std::optional<double> RunFigures::*figure) {
  double sum = 0.0;
  int count = 0;
  for (const RunFigures* run : runs) {
    if (!(run->*figure)) continue;
    sum += *(run->*figure);
    ++count;
  }
  if (count == 0) return std::nullopt;
  return sum / count;
}

CellFigures Summarize(const std::vector<const RunFigures*>& runs) {
  CellFigures cell;
  cell.cell_index = runs.front()->cell_index;
  cell.params = runs.front()->params;
  std::vector<const RunFigures*> ok;
  std::vector<const RunFigures*> oom;
  for (const RunFigures* run : runs) {
    cell.cell_index = std::min(cell.cell_index, run->cell_index);
    cell.run_ids.push_back(run->run_id);
    (run->status == RunStatus::kOk ? ok : oom).push_back(run);
  }
  cell.ok_runs = static_cast<int>(ok.size());
  cell.oom_runs = static_cast<int>(oom.size());
  const auto& measured = ok.empty() ? oom : ok;
  cell.peak_allocated_bytes = Mean(measured, &RunFigures::peak_allocated_bytes);
  cell.peak_reserved_bytes = Mean(measured, &RunFigures::peak_reserved_bytes);
  cell.activations_bytes = Mean(measured, &RunFigures::activations_bytes);
  if (!ok.empty()) {
    cell.tokens_per_s = Mean(ok, &RunFigures::tokens_per_s);
    cell.final_loss = Mean(ok, &RunFigures::final_loss);
    cell.estimate_error = Mean(ok, &RunFigures::estimate_error);
  }
  for (const RunFigures* run : runs) {
    if (run->estimate_status.empty()) continue;
    cell.estimate_status = run->estimate_status;
    cell.estimated_peak_allocated_bytes = run->estimated_peak_allocated_bytes;
    break;
  }
  return cell;
}

bool IsRunId(const std::string& spec) {
  return !spec.empty() && spec.find_first_not_of("0123456789") == std::string::npos;
}

std::string DescribeCells(const std::vector<CellFigures>& cells, const std::vector<size_t>& which) {
  std::ostringstream out;
  for (size_t i = 0; i < which.size(); ++i) out << (i ? ", " : "") << cells[which[i]].cell_index;
  return out.str();
}

size_t CellOfRun(const std::vector<CellFigures>& cells, int64_t run_id) {
  for (size_t i = 0; i < cells.size(); ++i) {
    for (int64_t id : cells[i].run_ids) {
      if (id == run_id) return i;
    }
  }
  throw std::invalid_argument("run " + std::to_string(run_id) +
                              " is not an ok or oom run of this experiment");
}

size_t CellWithParams(const std::vector<CellFigures>& cells, const std::string& spec) {
  experiment::CellSelector selector;
  try {
    selector = experiment::ParseCellSelector(spec);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("baseline ") + e.what());
  }
  for (const auto& [key, value] : selector.pairs) {
    bool known = false;
    for (const CellFigures& cell : cells) known = known || experiment::FindParam(cell.params, key) != nullptr;
    if (!known) throw std::invalid_argument("baseline: no cell has a parameter '" + key + "'");
  }
  std::vector<size_t> matches;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (selector.Matches(cells[i].params)) matches.push_back(i);
  }
  if (matches.empty()) throw std::invalid_argument("baseline: no cell has " + spec);
  if (matches.size() > 1) {
    throw std::invalid_argument("baseline: " + std::to_string(matches.size()) + " cells have " +
                                spec + " (cells " + DescribeCells(cells, matches) +
                                "); give more keys");
  }
  return matches.front();
}

}  // namespace

const char* CellFigures::Status() const {
  if (oom_runs == 0) return "ok";
  if (ok_runs == 0) return "oom";
  return "mixed";
}

std::vector<CellFigures> GroupIntoCells(const std::vector<RunFigures>& runs) {
  std::map<std::string, std::vector<const RunFigures*>> by_params;  // key: canonical JSON
  for (const RunFigures& run : runs) by_params[run.params.dump()].push_back(&run);
  std::vector<CellFigures> cells;
  for (const auto& [params, group] : by_params) cells.push_back(Summarize(group));
  std::sort(cells.begin(), cells.end(),
            [](const CellFigures& a, const CellFigures& b) { return a.cell_index < b.cell_index; });
  return cells;
}

size_t FindBaselineCell(const std::vector<CellFigures>& cells, const std::string& spec) {
  size_t baseline = cells.size();
  if (spec.empty()) {
    for (size_t i = 0; i < cells.size() && baseline == cells.size(); ++i) {
      if (cells[i].ok_runs > 0) baseline = i;
    }
    if (baseline == cells.size()) {
      throw std::invalid_argument("no cell has an ok run to compare against");
    }
    return baseline;
  }
  if (IsRunId(spec)) {
    baseline = CellOfRun(cells, std::stoll(spec));
  } else if (spec.find('=') != std::string::npos) {
    baseline = CellWithParams(cells, spec);
  } else {
    throw std::invalid_argument("baseline '" + spec + "': expected a run id or key=value pairs");
  }
  if (cells[baseline].ok_runs == 0) {
    throw std::invalid_argument("baseline cell " + std::to_string(cells[baseline].cell_index) +
                                " has no ok run (status " + cells[baseline].Status() + ")");
  }
  return baseline;
}

std::string ParamText(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

bool ParamMatches(const json& value, const std::string& text) {
  return experiment::ParamValueMatches(value, text);
}

const json& ParamValue(const json& params, const std::string& key) {
  static const json kNull;
  const auto it = params.find(key);
  return it == params.end() ? kNull : *it;
}

}  // namespace memsweep::results
