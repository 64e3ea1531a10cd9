// Ablations: the [[ablation]] tables of an experiment file. Each names one change to the base
// configuration (one or more dotted keys); memsweep runs the base configuration, each change on
// its own ("+name"), all changes together ("all"), and all but one ("all-name"), so that what
// each step adds and what removing it costs are both measured (docs/experiment-format.md,
// "Ablations").
//
//   [[ablation]]
//   name = "bf16"
//   "strategies.precision.plugin" = "bf16-autocast"
#pragma once

#include <toml++/toml.h>

#include <string>
#include <vector>

#include "core/experiment/matrix.h"

namespace memsweep::experiment {

// One cell of an ablation: its label and the steps it turns on (indices into the steps).
struct AblationVariant {
  std::string label;
  std::vector<size_t> steps;
};

// Reads root["ablation"] into spec.ablation (absent: no steps). The steps' keys must not
// overlap a key the matrix varies or a key of another step (however each names list entries).
// Throws config::ConfigError.
void ReadAblation(toml::table& root, const std::string& source, MatrixSpec& spec);
// Drops the items of steps that a --set assignment overrides (the set value wins in every cell),
// and the steps left with no item.
// Keys are compared as paths into `root` (config::CanonicalKey).
void PinAblationOverrides(const toml::table& root, const std::vector<std::string>& overrides,
                          MatrixSpec& spec);

// baseline, +each step, all, all-each step; a variant whose set of steps is already listed is left
// out (with one step: baseline and +step; with two, "all-a" is "+b").
std::vector<AblationVariant> AblationVariants(const std::vector<AblationStep>& steps);

}  // namespace memsweep::experiment
