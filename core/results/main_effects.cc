#include "core/results/main_effects.h"

#include <algorithm>
#include <set>

namespace memsweep::results {
namespace {

using nlohmann::json;

// Mean of a cell figure over the cells with an ok run whose `key` equals `value`.
std::optional<double> MeanOverLevel(const std::vector<CellFigures>& cells, const std::string& key,
                                    const json& value, std::optional<double> CellFigures::*figure) {
  double sum = 0.0;
  int count = 0;
  for (const CellFigures& cell : cells) {
    if (cell.ok_runs == 0 || ParamValue(cell.params, key) != value || !(cell.*figure)) continue;
    sum += *(cell.*figure);
    ++count;
  }
  if (count == 0) return std::nullopt;
  return sum / count;
}

FactorLevelEffect Effect(const std::vector<CellFigures>& cells, const std::string& key,
                         const json& value, const json& baseline_value) {
  FactorLevelEffect effect;
  effect.factor = key;
  effect.value = value;
  for (const CellFigures& cell : cells) {
    if (ParamValue(cell.params, key) != value) continue;
    ++(cell.ok_runs > 0 ? effect.cells : effect.oom_cells);
  }
  const auto level_ratio = [&](std::optional<double> CellFigures::*figure) {
    return Ratio(MeanOverLevel(cells, key, value, figure),
                 MeanOverLevel(cells, key, baseline_value, figure));
  };
  effect.peak_allocated_ratio = level_ratio(&CellFigures::peak_allocated_bytes);
  effect.peak_reserved_ratio = level_ratio(&CellFigures::peak_reserved_bytes);
  effect.tokens_per_s_ratio = level_ratio(&CellFigures::tokens_per_s);
  effect.final_loss_delta =
      Delta(MeanOverLevel(cells, key, value, &CellFigures::final_loss),
            MeanOverLevel(cells, key, baseline_value, &CellFigures::final_loss));
  return effect;
}

// The values `key` takes over the cells, in order of first appearance.
std::vector<json> DistinctValues(const std::vector<CellFigures>& cells, const std::string& key) {
  std::vector<json> values;
  for (const CellFigures& cell : cells) {
    const json& value = ParamValue(cell.params, key);
    if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
  }
  return values;
}

}  // namespace

std::optional<double> Ratio(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *b == 0.0) return std::nullopt;
  return *a / *b;
}

std::optional<double> Delta(std::optional<double> a, std::optional<double> b) {
  if (!a || !b) return std::nullopt;
  return *a - *b;
}

std::vector<std::string> VaryingKeys(const std::vector<CellFigures>& cells) {
  std::set<std::string> keys;
  for (const CellFigures& cell : cells) {
    for (const auto& [key, value] : cell.params.items()) keys.insert(key);
  }
  std::vector<std::string> varying;
  for (const std::string& key : keys) {
    if (DistinctValues(cells, key).size() > 1) varying.push_back(key);
  }
  return varying;
}

std::vector<FactorLevelEffect> MainEffects(const std::vector<CellFigures>& cells,
                                           const CellFigures& baseline) {
  std::vector<FactorLevelEffect> effects;
  for (const std::string& key : VaryingKeys(cells)) {
    const json& baseline_value = ParamValue(baseline.params, key);
    for (const json& value : DistinctValues(cells, key)) {
      effects.push_back(Effect(cells, key, value, baseline_value));
    }
  }
  return effects;
}

}  // namespace memsweep::results
