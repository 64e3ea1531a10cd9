// Main effects of an ablation: for every matrix key that varies and each of its values, how the
// cells having that value compare with the cells having the baseline cell's value for that key
// (ratios of mean peaks and throughput, difference of mean final loss). Definitions:
// docs/results.md, "compare".
//
//   for (const FactorLevelEffect& effect : MainEffects(cells, cells[baseline])) {
//     std::cout << effect.factor << "=" << ParamText(effect.value) << ": "
//               << effect.tokens_per_s_ratio.value_or(NAN) << "\n";
//   }
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/results/cell_figures.h"

namespace memsweep::results {

struct FactorLevelEffect {
  std::string factor;    // dotted matrix key
  nlohmann::json value;  // null when cells lack the key
  int cells = 0;         // cells with this value and an ok run: the ones averaged
  int oom_cells = 0;     // cells with this value and only oom runs: left out of the means
  std::optional<double> peak_allocated_ratio;
  std::optional<double> peak_reserved_ratio;
  std::optional<double> tokens_per_s_ratio;
  std::optional<double> final_loss_delta;
};

// Keys whose value is not the same in every cell (a key missing from a cell counts as null),
// in alphabetical order.
std::vector<std::string> VaryingKeys(const std::vector<CellFigures>& cells);

// One entry per varying key and value (values in order of first appearance by cell_index),
// the baseline's own value included (ratios 1, delta 0).
std::vector<FactorLevelEffect> MainEffects(const std::vector<CellFigures>& cells,
                                           const CellFigures& baseline);

// a / b; nullopt when either is missing or b is 0.
std::optional<double> Ratio(std::optional<double> a, std::optional<double> b);
// a - b; nullopt when either is missing.
std::optional<double> Delta(std::optional<double> a, std::optional<double> b);

}  // namespace memsweep::results
