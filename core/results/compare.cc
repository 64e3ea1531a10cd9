#include "core/results/compare.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "core/experiment/cell.h"
#include "core/results/cell_verdicts.h"
#include "core/results/main_effects.h"
#include "core/results/table_fit.h"

namespace memsweep::results {
namespace {

using nlohmann::json;

using Value = std::pair<std::optional<std::string>, ValueKind>;

Value Integer(int64_t value) { return {std::to_string(value), ValueKind::kInteger}; }

Value Real(std::optional<double> value) {
  if (!value) return {std::nullopt, ValueKind::kNull};
  return {RealToText(*value), ValueKind::kReal};
}

Value RoundedInteger(std::optional<double> value) {
  if (!value) return {std::nullopt, ValueKind::kNull};
  return Integer(std::llround(*value));
}

Value Text(const std::string& value) { return {value, ValueKind::kText}; }

Value Param(const json& value) {
  if (value.is_null()) return {std::nullopt, ValueKind::kNull};
  if (value.is_number_integer()) return Integer(value.get<int64_t>());
  if (value.is_number_float()) return Real(value.get<double>());
  return Text(ParamText(value));
}

void AddRow(QueryResult& table, const std::vector<Value>& row) {
  std::vector<std::optional<std::string>> values;
  std::vector<ValueKind> kinds;
  for (const auto& [text, kind] : row) {
    values.push_back(text);
    kinds.push_back(kind);
  }
  table.AddRow(std::move(values), std::move(kinds));
}

ExperimentRow ChooseExperiment(ResultsDb& db, const std::string& name) {
  if (std::optional<ExperimentRow> experiment = db.LatestExperiment(name)) return *experiment;
  if (name.empty()) throw ResultsError(db.path(), "no experiments yet");
  std::string known;
  for (const auto& row : db.Query("SELECT DISTINCT name FROM experiments ORDER BY name").rows) {
    known += (known.empty() ? "" : ", ") + row[0].value_or("");
  }
  throw ResultsError(db.path(), "no experiment named '" + name + "' (experiments: " + known + ")");
}

std::optional<double> OptionalNumber(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  return std::strtod(text->c_str(), nullptr);
}

std::vector<RunFigures> LoadRuns(ResultsDb& db, int64_t experiment_id) {
  const QueryResult result = db.Query(
      "SELECT run_id, cell_index, status, params, peak_allocated_bytes, peak_reserved_bytes, "
      "tokens_per_s, final_loss, activations_bytes, estimated_peak_allocated_bytes, "
      "estimate_error, estimate_status FROM run_summary "
      "WHERE experiment_id = ?1 AND status IN ('ok', 'oom') ORDER BY cell_index, repeat, run_id",
      {std::to_string(experiment_id)});
  std::vector<RunFigures> runs;
  for (const auto& row : result.rows) {
    RunFigures run;
    run.run_id = std::stoll(row[0].value_or("0"));
    run.cell_index = std::stoll(row[1].value_or("0"));
    run.status = row[2] == std::optional<std::string>("oom") ? RunStatus::kOom : RunStatus::kOk;
    const json params = json::parse(row[3].value_or("{}"), nullptr, /*allow_exceptions=*/false);
    if (params.is_object()) run.params = params;
    run.peak_allocated_bytes = OptionalNumber(row[4]);
    run.peak_reserved_bytes = OptionalNumber(row[5]);
    run.tokens_per_s = OptionalNumber(row[6]);
    run.final_loss = OptionalNumber(row[7]);
    run.activations_bytes = OptionalNumber(row[8]);
    run.estimated_peak_allocated_bytes = OptionalNumber(row[9]);
    run.estimate_error = OptionalNumber(row[10]);
    run.estimate_status = row[11].value_or("");
    runs.push_back(std::move(run));
  }
  return runs;
}

// The cell_index of the experiment's [experiment] reference: the cell whose runs name
// themselves as their reference (experiment_plan.cc); nullopt when the experiment names none.
std::optional<int64_t> ReferenceCellIndex(ResultsDb& db, int64_t experiment_id) {
  const QueryResult result = db.Query(
      "SELECT min(cell_index) FROM runs WHERE experiment_id = ?1 AND reference_hash = cell_hash",
      {std::to_string(experiment_id)});
  if (result.rows.empty() || !result.rows.front().front()) return std::nullopt;
  return std::stoll(*result.rows.front().front());
}

int64_t CountOtherRuns(ResultsDb& db, int64_t experiment_id) {
  const QueryResult result =
      db.Query("SELECT count(*) FROM runs WHERE experiment_id = ?1 AND status NOT IN ('ok', 'oom')",
               {std::to_string(experiment_id)});
  return std::stoll(result.rows.at(0).at(0).value_or("0"));
}

Value OptionalInteger(std::optional<int64_t> value) {
  if (!value) return {std::nullopt, ValueKind::kNull};
  return Integer(*value);
}

Value OptionalText(const std::string& value) {
  if (value.empty()) return {std::nullopt, ValueKind::kNull};
  return Text(value);
}

// verdict, expected, compute_dtype, max_abs_deviation, max_rel_deviation, max_deviation_step,
// tolerance_rel, verdict_reason
void AddVerdictColumns(const CellVerdict& cell, std::vector<Value>& row) {
  const RunVerdict& v = cell.verdict;
  row.push_back(Text(VerdictName(v.verdict)));
  row.push_back(v.expectation ? Text(ExpectationName(*v.expectation)) : Value{std::nullopt, ValueKind::kNull});
  row.push_back(OptionalText(v.compute_dtype));
  row.push_back(Real(cell.max_abs_deviation));
  row.push_back(Real(cell.max_rel_deviation));
  row.push_back(OptionalInteger(cell.max_deviation_step));
  row.push_back(Real(v.tolerance));
  row.push_back(OptionalText(v.reason));
}

// baseline and verdicts are null when no cell ran ok: those columns are then empty.
QueryResult CellsTable(const std::vector<CellFigures>& cells,
                       const std::vector<std::string>& factors, const CellFigures* baseline,
                       const CellVerdicts* verdicts) {
  const Value none{std::nullopt, ValueKind::kNull};
  const auto ratio = [&](std::optional<double> value, std::optional<double> CellFigures::*field) {
    return baseline == nullptr ? none : Real(Ratio(value, baseline->*field));
  };
  QueryResult table;
  table.columns.push_back("cell");
  table.columns.insert(table.columns.end(), factors.begin(), factors.end());
  for (const char* column :
       {"n", "status", "peak_allocated_bytes", "peak_allocated_ratio", "peak_reserved_ratio",
        "estimate", "estimated_peak_allocated_bytes", "estimate_error", "activations_bytes", "activations_ratio", "tokens_per_s", "tokens_per_s_ratio", "final_loss", "final_loss_delta", "verdict",
        "expected", "compute_dtype", "max_abs_deviation", "max_rel_deviation",
        "max_deviation_step", "tolerance_rel", "verdict_reason"}) {
    table.columns.push_back(column);
  }
  for (const CellFigures& cell : cells) {
    std::vector<Value> row = {Integer(cell.cell_index)};
    for (const std::string& factor : factors) row.push_back(Param(ParamValue(cell.params, factor)));
    row.push_back(Integer(cell.RunCount()));
    row.push_back(Text(cell.Status()));
    row.push_back(RoundedInteger(cell.peak_allocated_bytes));
    row.push_back(ratio(cell.peak_allocated_bytes, &CellFigures::peak_allocated_bytes));
    row.push_back(ratio(cell.peak_reserved_bytes, &CellFigures::peak_reserved_bytes));
    row.push_back(OptionalText(cell.estimate_status));
    row.push_back(RoundedInteger(cell.estimated_peak_allocated_bytes));
    row.push_back(Real(cell.estimate_error));
    row.push_back(RoundedInteger(cell.activations_bytes));
    row.push_back(ratio(cell.activations_bytes, &CellFigures::activations_bytes));
    row.push_back(Real(cell.tokens_per_s));
    row.push_back(ratio(cell.tokens_per_s, &CellFigures::tokens_per_s));
    row.push_back(Real(cell.final_loss));
    row.push_back(baseline == nullptr ? none : Real(Delta(cell.final_loss, baseline->final_loss)));
    if (verdicts == nullptr) {
      row.insert(row.end(), 8, none);  // the verdict columns (AddVerdictColumns)
    } else {
      AddVerdictColumns(verdicts->by_cell.at(cell.cell_index), row);
    }
    AddRow(table, row);
  }
  return table;
}

QueryResult EffectsTable(const std::vector<FactorLevelEffect>& effects) {
  QueryResult table;
  table.columns = {"factor",
                   "value",
                   "cells",
                   "oom_cells",
                   "peak_allocated_ratio",
                   "peak_reserved_ratio",
                   "tokens_per_s_ratio",
                   "final_loss_delta"};
  for (const FactorLevelEffect& effect : effects) {
    AddRow(table, {Text(effect.factor), Param(effect.value), Integer(effect.cells),
                   Integer(effect.oom_cells), Real(effect.peak_allocated_ratio),
                   Real(effect.peak_reserved_ratio), Real(effect.tokens_per_s_ratio),
                   Real(effect.final_loss_delta)});
  }
  return table;
}

std::string DescribeParams(const json& params, const std::vector<std::string>& keys) {
  std::string text;
  for (const std::string& key : keys) {
    text += (text.empty() ? "" : ", ") + key + "=" + ParamText(ParamValue(params, key));
  }
  return text;
}

std::string Plural(int64_t count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

std::string VerificationSource(const Comparison& c) {
  const std::string cell =
      c.reference_cell ? "cell " + std::to_string(*c.reference_cell) : std::string("?");
  if (c.verified_against_reference) return "the experiment's reference, " + cell;
  return "the baseline, " + cell + " (the experiment names no [experiment] reference)";
}

const char* BaselineChoiceName(BaselineChoice choice) {
  switch (choice) {
    case BaselineChoice::kOption: return "option";
    case BaselineChoice::kReference: return "reference";
    case BaselineChoice::kFirstOk: return "first ok cell";
  }
  return "";
}

std::string TableHeading(const Comparison& comparison) {
  std::ostringstream out;
  const Comparison& c = comparison;
  out << "experiment '" << c.experiment.name << "' (id " << c.experiment.id << ", created "
      << c.experiment.created_at << ")\n"
      << Plural(static_cast<int64_t>(c.cells.rows.size()), "cell") << " from "
      << Plural(c.compared_runs, "run") << " with status ok or oom";
  if (c.other_runs > 0) {
    out << "; " << Plural(c.other_runs, "other run") << " (pending, running, failed, timeout) "
        << "not compared";
  }
  if (!c.baseline) {
    out << "\nbaseline: none: no cell ran ok (every one ran out of memory), so there are no ratios,"
        << " loss verdicts or factor effects; each cell's out-of-memory message:\n"
        << "  memsweep query \"SELECT cell_index, peak_reserved_bytes, error FROM run_summary"
        << " WHERE experiment = '" << c.experiment.name << "' ORDER BY cell_index\"\n\n";
    return out.str();
  }
  out << "\nbaseline: cell " << c.baseline->cell_index;
  if (!c.factors.empty()) out << " (" << DescribeParams(c.baseline->params, c.factors) << ")";
  out << ", " << Plural(c.baseline->ok_runs, "ok run");
  if (c.baseline_choice == BaselineChoice::kReference) {
    out << ": the experiment's [experiment] reference";
  } else if (c.baseline_choice == BaselineChoice::kFirstOk && c.named_reference_cell) {
    out << ": the lowest cell with an ok run (the [experiment] reference, cell "
        << *c.named_reference_cell << ", has none)";
  }
  out << "\n";
  out << "loss verification: against " << VerificationSource(c) << "\n\n";
  return out.str();
}

nlohmann::ordered_json ComparisonToJson(const Comparison& c) {
  nlohmann::ordered_json out;
  out["experiment"] = {{"id", c.experiment.id},
                       {"name", c.experiment.name},
                       {"created_at", c.experiment.created_at}};
  if (!c.baseline) {  // no cell ran ok: no baseline, nothing verified
    out["baseline"] = nullptr;
    out["verification"] = nullptr;
  } else {
    out["baseline"] = {{"cell", c.baseline->cell_index},
                       {"run_ids", c.baseline->run_ids},
                       {"chosen_by", BaselineChoiceName(c.baseline_choice)},
                       {"params", nlohmann::ordered_json::parse(c.baseline->params.dump())}};
    out["verification"] = {{"against", c.verified_against_reference ? "reference" : "baseline"},
                           {"cell", c.reference_cell ? nlohmann::ordered_json(*c.reference_cell)
                                                     : nlohmann::ordered_json()}};
  }
  out["compared_runs"] = c.compared_runs;
  out["other_runs"] = c.other_runs;
  out["cells"] = QueryResultToJson(c.cells);
  out["effects"] = QueryResultToJson(c.effects);
  return out;
}

}  // namespace

Comparison Compare(ResultsDb& db, const CompareOptions& options) {
  Comparison comparison;
  std::optional<ExperimentRow> by_id;
  if (options.experiment_id) by_id = db.FindExperiment(*options.experiment_id);
  if (options.experiment_id && !by_id) {
    throw ResultsError(db.path(), "no experiment " + std::to_string(*options.experiment_id));
  }
  comparison.experiment = by_id ? *by_id : ChooseExperiment(db, options.experiment);
  const int64_t experiment_id = comparison.experiment.id;
  const std::vector<RunFigures> runs = LoadRuns(db, experiment_id);
  comparison.compared_runs = static_cast<int64_t>(runs.size());
  comparison.other_runs = CountOtherRuns(db, experiment_id);
  const std::vector<CellFigures> cells = GroupIntoCells(runs);
  if (cells.empty()) {
    throw ResultsError(db.path(), "experiment '" + comparison.experiment.name +
                                      "' has no run with status ok or oom yet");
  }
  comparison.factors = VaryingKeys(cells);
  const bool any_ok = std::any_of(cells.begin(), cells.end(),
                                  [](const CellFigures& cell) { return cell.ok_runs > 0; });
  if (!any_ok && options.baseline.empty()) {
    comparison.cells = CellsTable(cells, comparison.factors, nullptr, nullptr);
    comparison.effects = EffectsTable({});
    return comparison;
  }
  comparison.named_reference_cell = ReferenceCellIndex(db, experiment_id);
  try {
    comparison.baseline_choice =
        options.baseline.empty() ? BaselineChoice::kFirstOk : BaselineChoice::kOption;
    size_t chosen = cells.size();
    if (options.baseline.empty() && comparison.named_reference_cell) {
      for (size_t i = 0; i < cells.size(); ++i) {
        if (cells[i].cell_index == *comparison.named_reference_cell && cells[i].ok_runs > 0) {
          chosen = i;
          comparison.baseline_choice = BaselineChoice::kReference;
        }
      }
    }
    if (chosen == cells.size()) chosen = FindBaselineCell(cells, options.baseline);
    comparison.baseline = cells[chosen];
  } catch (const std::invalid_argument& e) {
    throw ResultsError(db.path(), "experiment '" + comparison.experiment.name + "': " + e.what());
  }
  const CellFigures& baseline = *comparison.baseline;
  const CellVerdicts verdicts = VerifyCells(db, experiment_id, cells, baseline);
  comparison.verified_against_reference = verdicts.from_reference;
  comparison.reference_cell = verdicts.reference_cell;
  comparison.cells = CellsTable(cells, comparison.factors, &baseline, &verdicts);
  comparison.effects = EffectsTable(MainEffects(cells, baseline));
  return comparison;
}

std::vector<std::string> CellsColumnImportance(const std::vector<std::string>& factors) {
  std::vector<std::string> order = {"cell"};
  order.insert(order.end(), factors.begin(), factors.end());
  for (const char* column :
       {"status", "peak_allocated_bytes", "peak_allocated_ratio", "tokens_per_s_ratio",
        "final_loss_delta", "verdict", "n", "verdict_reason", "estimate_error",
        "activations_ratio", "peak_reserved_ratio", "tokens_per_s", "final_loss", "expected",
        "estimate", "estimated_peak_allocated_bytes", "activations_bytes", "max_rel_deviation",
        "compute_dtype", "max_abs_deviation", "tolerance_rel", "max_deviation_step"}) {
    order.push_back(column);
  }
  return order;
}

std::string FormatComparison(const Comparison& comparison, const ComparisonFormat& format) {
  const ComparisonTable chosen = format.table.value_or(ComparisonTable::kCells);
  const bool effects_chosen = chosen == ComparisonTable::kEffects;
  const QueryResult& chosen_table = effects_chosen ? comparison.effects : comparison.cells;
  // Checked before anything is printed: an unknown name is an error (exit code 2).
  const std::vector<std::string> columns =
      format.columns.empty()
          ? std::vector<std::string>{}
          : ResolveColumns(format.columns, chosen_table.columns,
                           effects_chosen ? "the effects table" : "the cells table");
  const auto selected = [&](const QueryResult& table) {
    return columns.empty() ? table : SelectColumns(table, columns);
  };
  switch (format.format) {
    case OutputFormat::kTable: {
      const size_t width = format.width;
      const auto wrapped = [width](const std::string& text) {
        return width == 0 ? text : WrapText(text, width);
      };
      // `table` is `which` (its --columns apply when it is the chosen one).
      const auto print = [&](const QueryResult& table, ComparisonTable which,
                             std::vector<std::string> importance) {
        const bool is_chosen = which == chosen;
        if (width == 0) return FormatTable(is_chosen ? selected(chosen_table) : table);
        const FitOptions fit{.width = width,
                             .importance = std::move(importance),
                             .columns = is_chosen ? columns : std::vector<std::string>{}};
        const FittedTable fitted = FitTable(table, fit);
        return fitted.text + LeftOutNote(fitted, width);
      };
      std::string out = wrapped(TableHeading(comparison));
      if (!format.table || chosen == ComparisonTable::kCells) {
        out += print(comparison.cells, ComparisonTable::kCells,
                     CellsColumnImportance(comparison.factors));
      }
      if (format.table == ComparisonTable::kCells) return out;
      if (comparison.effects.rows.empty()) {
        return effects_chosen ? out + "no matrix key varies: no factor effects\n" : out;
      }
      // A fitted effects table names the factors as the fitted cells table heads them.
      QueryResult effects = comparison.effects;
      if (width != 0 && TextWidth(FormatTable(effects)) > width) {
        const auto names = experiment::ShortParamNames(comparison.cells.columns);
        for (auto& row : effects.rows) {
          if (row[0] && names.count(*row[0]) != 0) row[0] = names.at(*row[0]);
        }
      }
      out += (format.table ? "" : "\n") +
             wrapped("effect of each factor (mean over the cells with each value, relative to "
                     "the cells with the baseline's value):") +
             "\n\n";
      return out + print(effects, ComparisonTable::kEffects,
                         {"factor", "value", "cells", "oom_cells", "peak_allocated_ratio",
                          "tokens_per_s_ratio", "final_loss_delta", "peak_reserved_ratio"});
    }
    case OutputFormat::kCsv: return FormatCsv(selected(chosen_table));
    case OutputFormat::kJson: {
      nlohmann::ordered_json json;
      if (format.table) {
        json = QueryResultToJson(selected(chosen_table));
      } else {
        json = ComparisonToJson(comparison);
        if (!columns.empty()) json["cells"] = QueryResultToJson(selected(comparison.cells));
      }
      return json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    }
  }
  return "";
}

std::string FormatComparison(const Comparison& comparison, OutputFormat format) {
  return FormatComparison(comparison, ComparisonFormat{.format = format});
}

}  // namespace memsweep::results
