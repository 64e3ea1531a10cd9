// How --set overrides meet an experiment matrix: a --set of "matrix.<key>" replaces that key's
// list; a --set of a key the matrix varies wins over the matrix (docs/experiment-format.md,
// "Matrices").
//
//   if (!ApplyMatrixOverride(root, assignment, path)) config::ApplyOverride(root, assignment);
//   ...
//   PinOverriddenKeys(root, overrides, spec);  // part of ReadMatrix
#pragma once

#include <toml++/toml.h>

#include <string>
#include <vector>

#include "core/experiment/matrix.h"

namespace memsweep::experiment {

// Applies "matrix.<dotted key>=[values]": replaces that key's list whether the file writes the
// key quoted or as nested tables. Returns false (and changes nothing) for any other assignment,
// which config::ApplyOverride handles.
bool ApplyMatrixOverride(toml::table& root, const std::string& assignment,
                         const std::string& source);

// For each of the --set `overrides` (already applied to `root`): a matrix key it sets, or a
// table holding one, is pinned to the value now in the document; include entries that set a
// pinned key to another value are dropped, and include items for a key it sets are removed.
// Throws config::ConfigError when a --set changes part of a value the matrix varies as a whole.
void PinOverriddenKeys(toml::table& root, const std::vector<std::string>& overrides,
                       MatrixSpec& spec);

}  // namespace memsweep::experiment
