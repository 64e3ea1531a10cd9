// Cell: one run of an experiment matrix — the experiment file with one combination of matrix
// values filled in and one repeat's seed — and its identity, a hash of that resolved document.
// Cells travel to worker processes as TOML text.
//
//   std::string text = CellToToml(cell);           // [cell] metadata + the document
//   Cell same = CellFromToml(text, "cell.toml");    // same.hash == cell.hash
//   config::RunConfig cfg = config::RunConfigFromTable(same.document, same.source);
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::experiment {

struct Cell {
  int64_t index = 0;        // position in the plan
  int64_t combination = 0;  // which matrix combination; its repeats differ only in seed
  int64_t repeat = 0;       // 0..repeats-1
  uint64_t seed = 0;        // [experiment] seed + repeat, also in `document`
  std::string hash;         // CellHash(document)
  std::string source;       // the experiment file: names it in messages, anchors relative paths
  // The experiment file with the combination's values at their dotted paths, [matrix] removed,
  // [experiment] seed set, repeats and reference removed. Every other table passes through untouched.
  toml::table document;
  // Dotted key -> value for the keys the matrix varies and those include entries added.
  nlohmann::json params = nlohmann::json::object();
  // The hash of the cell whose losses this one is verified against ([experiment] reference:
  // the reference combination's cell with the same repeat); "" when the experiment names none.
  std::string reference_hash;
  // A cell read from a cell file (CellFromToml): each position of a value or key in that file
  // ("cell.toml:14:10") -> where the experiment file set the value ("x.toml:12:5", a [matrix]
  // line for a matrix value), from the file's [cell] origins. Empty for a plan's own cells, whose
  // values carry the experiment file's positions themselves.
  std::map<std::string, std::string> origins;

  // `message` with each position in the cell file that `origins` knows replaced by the
  // experiment file's: what a worker's and an estimate's errors say, so that they point at the
  // user's own line, not at a temporary cell file.
  std::string InExperimentFile(const std::string& message) const;

  // "device.memory_budget=32MiB strategies.batching.micro_batch_size=2" (keys sorted, values as
  // ParamText writes them; "" without a matrix).
  std::string Label() const;
  // "cell 3 (device.memory_budget=32MiB ..., repeat 1, seed 1235)", for messages.
  std::string Describe() const;
};

// A parameter's value as a table shows it, on one line without spaces: a string bare (inside a
// list or table quoted when it holds anything but letters, digits and _.+-/), a number or boolean
// as JSON, a table with a plugin as plugin(key=value,...), another table as {key=value,...}, a
// list as [value,...]:
//   [{plugin = "empty_cache", every = 2}]  ->  [empty_cache(every=2)]
std::string ParamText(const nlohmann::json& value);

// Short names for the dotted keys of cells' params, for tables whose rows show them side by
// side: each key's shortest ending that no ending of another key equals, where a slot's plugin key
// is named by its slot and a list entry by its list (an ending never starts with an index):
//   device.memory_budget, strategies.batching.micro_batch_size -> memory_budget, micro_batch_size
//   strategies.checkpointing.plugin, strategies.precision.plugin -> checkpointing, precision
//   strategies.callbacks.0.every, strategies.checkpointing.every -> callbacks.0.every,
//                                                                   checkpointing.every
std::map<std::string, std::string> ShortParamNames(const std::vector<std::string>& keys);

// The first 16 hex digits of the SHA-256 of the document as canonical JSON (keys sorted,
// compact): equal content gives an equal hash on every machine, whatever the key order.
std::string CellHash(const toml::table& document);

// The document as TOML, preceded by a [cell] table holding the rest of the Cell and, in
// [cell.origins], the experiment file's position of each value (dotted path -> "x.toml:12:5").
std::string CellToToml(const Cell& cell);
// The inverse; `text_name` names the text in messages. Throws config::ConfigError for malformed
// text, a missing [cell] table, or a hash that does not match the document.
Cell CellFromToml(std::string_view text, const std::string& text_name);

}  // namespace memsweep::experiment
