// `memsweep compare`: the cells of one experiment against a baseline cell (peak memory and
// throughput ratios, final-loss difference; repeats averaged), then the main effect of every
// matrix key that varies. Definitions: docs/results.md, "compare".
//
//   ResultsDb db("results/memsweep.db", ResultsDb::Mode::kReadOnly);
//   CompareOptions options;
//   options.baseline = "strategies.batching.micro_batch_size=8";
//   std::cout << FormatComparison(Compare(db, options), {.width = 100});
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/results/cell_figures.h"
#include "core/results/output_format.h"
#include "core/results/query_result.h"
#include "core/results/results_db.h"

namespace memsweep::results {

struct CompareOptions {
  std::string experiment;  // "" = the most recently created experiment
  // "" | "RUN_ID" | "key=value[,key=value]" (FindBaselineCell). "": the experiment's
  // [experiment] reference cell when it names one and that cell has an ok run, else the lowest
  // cell with an ok run.
  std::string baseline;
  std::optional<int64_t> experiment_id;  // this experiment, whatever `experiment` says
};

// How the comparison's baseline cell was chosen.
enum class BaselineChoice : uint8_t {
  kOption,     // CompareOptions::baseline named it
  kReference,  // the experiment's [experiment] reference cell
  kFirstOk,    // the lowest cell with an ok run
};

struct Comparison {
  ExperimentRow experiment;
  std::vector<std::string> factors;  // the matrix keys that vary across the compared cells
  // Empty when no compared cell has an ok run (every cell ran out of memory) and no baseline was
  // asked for: the cells are listed with their figures, without ratio, delta, loss verdict or
  // factor effect.
  std::optional<CellFigures> baseline;
  BaselineChoice baseline_choice = BaselineChoice::kFirstOk;
  // The cell the experiment's [experiment] reference names (runs.reference_hash); nullopt when
  // it names none. When it is not the baseline by default, its cell had no ok run.
  std::optional<int64_t> named_reference_cell;
  int64_t compared_runs = 0;  // runs with status ok or oom
  int64_t other_runs = 0;     // pending, running, failed or timeout: not compared
  // Loss-equivalence verdicts: against the experiment's stored [experiment] reference when it
  // has one, else computed against the baseline; reference_cell is that cell's number.
  bool verified_against_reference = false;
  std::optional<int64_t> reference_cell;
  // cell, one column per factor, n, status, peak_allocated_bytes, peak_allocated_ratio,
  // peak_reserved_ratio, tokens_per_s, tokens_per_s_ratio, final_loss, final_loss_delta,
  // verdict, expected, compute_dtype, max_abs_deviation, max_rel_deviation,
  // max_deviation_step, tolerance_rel, verdict_reason
  QueryResult cells;
  // factor, value, cells, oom_cells, peak_allocated_ratio, peak_reserved_ratio,
  // tokens_per_s_ratio, final_loss_delta; no rows when no key varies
  QueryResult effects;
};

// Throws ResultsError for an unknown experiment, a baseline that names no usable cell, or an
// experiment without ok or oom runs. An experiment whose cells all ran out of memory is compared
// without a baseline unless one is named.
Comparison Compare(ResultsDb& db, const CompareOptions& options);

// Which of a comparison's tables to print (`memsweep compare --table`).
enum class ComparisonTable : uint8_t { kCells, kEffects };

struct ComparisonFormat {
  OutputFormat format = OutputFormat::kTable;
  // One table; nullopt: the table format and JSON print both, CSV the cells table.
  std::optional<ComparisonTable> table;
  // The table format's width (table_fit.h); 0: every column, as FormatTable prints it (--wide).
  size_t width = 0;
  // Exactly these columns of the chosen table (the cells table when both are printed), in every
  // format (ResolveColumns' names; an unknown one throws config::ConfigError).
  std::vector<std::string> columns;
};

// Table: a heading, the cells, then the effects under their own heading; at a width, each table
// fitted (the cells by CellsColumnImportance) and followed by LeftOutNote, and the heading
// wrapped. CSV: one table, RFC 4180. JSON: {"experiment", "baseline", "verification",
// "compared_runs", "other_runs", "cells": [...], "effects": [...]}, or with `table` that table's
// array of row objects.
std::string FormatComparison(const Comparison& comparison, const ComparisonFormat& format);

// Every column (format.width 0), both tables in the table format and JSON, the cells in CSV.
std::string FormatComparison(const Comparison& comparison, OutputFormat format);

// The order in which a fitted cells table keeps its columns, most important first: cell, the
// factors, status, peak_allocated_bytes, the ratios and delta, verdict, ..., max_deviation_step.
std::vector<std::string> CellsColumnImportance(const std::vector<std::string>& factors);

}  // namespace memsweep::results
