// The figures of a run's result, one table per record: each figure's name (its key in the result
// JSON and its column in the results database), its unit, and the member of the result struct
// (run_result.h) that holds it. The result JSON (core/run_files/run_report.cc), the per-rank rows
// (core/launch/rank_results.cc) and the store (core/results/run_result_store.cc) are written from
// these tables; a test checks the database schema's columns against them. docs/metrics.md says
// how each figure is computed.
//
//   nlohmann::json summary = FieldsToJson(result.summary, SummaryFields());
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/env/environment.h"
#include "core/train/run_result.h"

namespace memsweep::train {

enum class Unit : uint8_t {
  kCount,
  kBytes,
  kSeconds,
  kTokensPerSecond,
  kFlopsPerSecond,
  kFlopsPerToken,
  kTokens,    // a length in tokens (positions)
  kFraction,  // a ratio in [0, 1]
  kNats,      // cross-entropy loss
  kText,
  kFlag,  // true / false
};
const char* UnitName(Unit unit);  // "bytes", "s", "tokens/s", ...

// Where a figure is recorded besides its record's section of the result JSON.
enum FieldUse : uint8_t {
  kRunMetrics = 1,  // a column of run_metrics (environments for EnvironmentFields)
  kRankRow = 2,     // a column of run_ranks: each rank's own value
};

template <class Struct>
struct ResultField {
  using Member = std::variant<int64_t Struct::*, int Struct::*, double Struct::*, bool Struct::*,
                              std::string Struct::*>;
  const char* name;
  Unit unit;
  Member member;
  uint8_t use = kRunMetrics;
};

const std::vector<ResultField<RunSummary>>& SummaryFields();         // JSON "summary"
const std::vector<ResultField<MemoryBreakdown>>& MemoryFields();     // JSON "memory"
const std::vector<ResultField<RankFigures>>& RankFigureFields();     // JSON "memory" (run's own)
const std::vector<ResultField<DeviceFigures>>& DeviceFields();       // JSON "device"
const std::vector<ResultField<env::EnvironmentInfo>>& EnvironmentFields();  // JSON "environment"

// The fields of `record` whose use includes `use`, as a JSON object {name: value}.
template <class Struct>
nlohmann::json FieldsToJson(const Struct& record, const std::vector<ResultField<Struct>>& fields,
                            uint8_t use = kRunMetrics) {
  nlohmann::json out = nlohmann::json::object();
  for (const ResultField<Struct>& field : fields) {
    if ((field.use & use) == 0) continue;
    std::visit([&](auto member) { out[field.name] = record.*member; }, field.member);
  }
  return out;
}

}  // namespace memsweep::train
