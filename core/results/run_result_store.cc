#include "core/results/run_result_store.h"

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/results/results_error.h"
#include "core/train/result_fields.h"

namespace memsweep::results {
namespace {

using nlohmann::json;

// One column filled from `document[section][key]` (`section` empty: the document itself).
struct Field {
  const char* column;
  const char* section;
  const char* key;
};

// Appends a column per field of `fields` whose use includes `use`, read from `section`.
template <class Struct>
void AddColumns(std::vector<Field>& out, const std::vector<train::ResultField<Struct>>& fields,
                const char* section, uint8_t use) {
  for (const auto& field : fields) {
    if ((field.use & use) != 0) out.push_back({field.name, section, field.name});
  }
}

// run_metrics: the run's summary, memory and device figures (train/result_fields.h), the OOM
// event, the compute dtype and the resolved configuration.
const std::vector<Field>& RunMetricsFields() {
  static const std::vector<Field> kFields = [] {
    std::vector<Field> fields;
    AddColumns(fields, train::SummaryFields(), "summary", train::kRunMetrics);
    AddColumns(fields, train::MemoryFields(), "memory", train::kRunMetrics);
    AddColumns(fields, train::RankFigureFields(), "memory", train::kRunMetrics);
    AddColumns(fields, train::DeviceFields(), "device", train::kRunMetrics);
    fields.push_back({"oom_requested_bytes", "oom", "requested_bytes"});
    fields.push_back({"oom_stage", "oom", "stage"});
    fields.push_back({"compute_dtype", "", "compute_dtype"});
    fields.push_back({"resolved_config_json", "", "config"});
    return fields;
  }();
  return kFields;
}

const std::vector<Field>& EnvironmentFields() {
  static const std::vector<Field> kFields = [] {
    std::vector<Field> fields;
    AddColumns(fields, train::EnvironmentFields(), "environment", train::kRunMetrics);
    return fields;
  }();
  return kFields;
}

// run_ranks: one row per rank (core/launch/rank_results.cc writes them).
const std::vector<Field>& RankFields() {
  static const std::vector<Field> kFields = [] {
    std::vector<Field> fields = {{"rank", "", "rank"},
                                 {"status", "", "status"},
                                 {"error", "", "error"},
                                 {"steps_completed", "", "steps_completed"}};
    AddColumns(fields, train::MemoryFields(), "", train::kRankRow);
    AddColumns(fields, train::RankFigureFields(), "", train::kRankRow);
    return fields;
  }();
  return kFields;
}

const std::vector<Field>& StepFields() {
  static const std::vector<Field> kFields = {
      {"step", "", "step"},           {"loss", "", "loss"},
      {"tokens", "", "tokens"},       {"positions", "", "positions"},
      {"seconds", "", "seconds"},     {"lr", "", "lr"},
      {"grad_norm", "", "grad_norm"}, {"peak_allocated_bytes", "", "peak_allocated_bytes"},
      {"skipped", "", "skipped"}};
  return kFields;
}

const std::vector<Field>& TimelineFields() {
  static const std::vector<Field> kFields = {{"step", "", "step"},
                                             {"stage", "", "stage"},
                                             {"seconds", "", "seconds"},
                                             {"allocated_bytes", "", "allocated_bytes"},
                                             {"reserved_bytes", "", "reserved_bytes"},
                                             {"peak_bytes", "", "peak_bytes"}};
  return kFields;
}

const std::vector<Field>& PhaseFields() {
  static const std::vector<Field> kFields = {{"phase", "", "phase"},
                                             {"peak_bytes", "", "peak_bytes"},
                                             {"model_state_bytes", "", "model_state_bytes"},
                                             {"activations_bytes", "", "activations_bytes"}};
  return kFields;
}

const std::vector<Field>& PluginFields() {
  static const std::vector<Field> kFields = {
      {"slot", "", "slot"},
      {"name", "", "name"},
      {"version", "", "version"},
      {"math_preserving", "", "math_preserving"}};
  return kFields;
}

// run_estimates: a row of core/estimate/isolated_estimate.h's JSON.
const std::vector<Field>& EstimateFields() {
  static const std::vector<Field> kFields = [] {
    std::vector<Field> fields;
    for (const char* key :
         {"status", "target", "device", "budget_bytes", "peak_allocated_bytes",
          "peak_reserved_bytes", "peak_stage", "peak_step", "largest_allocation_bytes",
          "blas_workspace_bytes", "oom_requested_bytes", "message", "seconds"}) {
      fields.push_back({key, "", key});
    }
    return fields;
  }();
  return kFields;
}

const json& Member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

const json& Section(const json& document, const char* section) {
  return section[0] == '\0' ? document : Member(document, section);
}

void BindJsonValue(SqliteStatement& statement, int index, const json& value) {
  if (value.is_null()) return statement.BindNull(index);
  if (value.is_boolean()) return statement.BindInt64(index, value.get<bool>() ? 1 : 0);
  if (value.is_number_integer()) return statement.BindInt64(index, value.get<int64_t>());
  if (value.is_number_float()) return statement.BindDouble(index, value.get<double>());
  if (value.is_string()) return statement.BindText(index, value.get_ref<const std::string&>());
  statement.BindText(index, value.dump());
}

// "INSERT INTO table (run_id, [seq,] columns...) VALUES (?1, ?2, ...)".
std::string InsertSql(const char* table, const std::vector<Field>& fields, bool with_seq) {
  std::string columns = "run_id";
  std::string values = "?1";
  int index = 1;
  if (with_seq) {
    columns += ", seq";
    values += ", ?" + std::to_string(++index);
  }
  for (const Field& field : fields) {
    columns += std::string(", ") + field.column;
    values += ", ?" + std::to_string(++index);
  }
  return std::string("INSERT INTO ") + table + " (" + columns + ") VALUES (" + values + ")";
}

void InsertOne(SqliteConnection& db, const char* table, const std::vector<Field>& fields,
               int64_t run_id, const json& document) {
  SqliteStatement insert = db.Prepare(InsertSql(table, fields, /*with_seq=*/false));
  insert.BindInt64(1, run_id);
  int index = 1;
  for (const Field& field : fields) {
    BindJsonValue(insert, ++index, Member(Section(document, field.section), field.key));
  }
  insert.Run();
}

// One row per element of `records`; `seq` (the element's position) when the table has one.
void InsertEach(SqliteConnection& db, const char* table, const std::vector<Field>& fields,
                bool with_seq, int64_t run_id, const json& records) {
  if (!records.is_array() || records.empty()) return;
  SqliteStatement insert = db.Prepare(InsertSql(table, fields, with_seq));
  int64_t seq = 0;
  for (const json& record : records) {
    insert.BindInt64(1, run_id);
    int index = 1;
    if (with_seq) insert.BindInt64(++index, seq++);
    for (const Field& field : fields) BindJsonValue(insert, ++index, Member(record, field.key));
    insert.Run();
  }
}

}  // namespace

void DeleteRunDetails(SqliteConnection& db, int64_t run_id) {
  static const char* kTables[] = {"run_plugins",     "environments", "step_metrics",
                                  "memory_timeline", "phase_memory", "run_metrics",
                                  "plugin_metrics", "run_ranks", "step_plugin_metrics",
                                  "run_estimates", "memory_snapshots"};
  for (const char* table : kTables) {
    SqliteStatement remove = db.Prepare(std::string("DELETE FROM ") + table + " WHERE run_id = ?1");
    remove.BindInt64(1, run_id);
    remove.Run();
  }
}

// memory_snapshots: the file the worker wrote beside its result, which `memory_snapshot` names
// (core/cli/worker_command.cc). A named file that cannot be read fails the transaction.
void StoreMemorySnapshot(SqliteConnection& db, int64_t run_id, const json& snapshot) {
  const json& file = Member(snapshot, "file");
  if (!file.is_string()) return;
  const std::string& path = file.get_ref<const std::string&>();
  std::ifstream in(path, std::ios::binary);
  std::string bytes;
  if (in) bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (!in.is_open() || in.bad() || bytes.empty()) {
    throw ResultsError(db.path(),
                       "the run's allocation history " + path +
                           " (named in its result) is missing, unreadable or empty",
                       ResultsError::Kind::kContent);
  }
  SqliteStatement insert = db.Prepare(
      "INSERT INTO memory_snapshots (run_id, format, events, bytes) VALUES (?1, ?2, ?3, ?4)");
  insert.BindInt64(1, run_id);
  const json& format = Member(snapshot, "format");
  insert.BindText(2, format.is_string() ? format.get<std::string>() : "");
  const json& events = Member(snapshot, "events");
  insert.BindInt64(3, events.is_number_integer() ? events.get<int64_t>() : 0);
  insert.BindBlob(4, bytes);
  insert.Run();
}

void StoreRunEstimate(SqliteConnection& db, int64_t run_id, const json& estimate) {
  InsertOne(db, "run_estimates", EstimateFields(), run_id, estimate);
}

void StoreRunDetails(SqliteConnection& db, int64_t run_id, const json& result) {
  if (result.contains("environment")) {
    InsertOne(db, "environments", EnvironmentFields(), run_id, result);
  }
  InsertOne(db, "run_metrics", RunMetricsFields(), run_id, result);
  StoreMemorySnapshot(db, run_id, Member(result, "memory_snapshot"));
  InsertEach(db, "phase_memory", PhaseFields(), /*with_seq=*/false, run_id,
             Member(Member(result, "memory"), "phases"));
  InsertEach(db, "step_metrics", StepFields(), /*with_seq=*/false, run_id, Member(result, "steps"));
  InsertEach(db, "memory_timeline", TimelineFields(), /*with_seq=*/true, run_id,
             Member(result, "timeline"));
  InsertEach(db, "run_plugins", PluginFields(), /*with_seq=*/true, run_id,
             Member(result, "plugins"));
  InsertEach(db, "run_ranks", RankFields(), /*with_seq=*/false, run_id, Member(result, "ranks"));
  const json& steps = Member(result, "steps");
  if (steps.is_array()) {
    SqliteStatement insert = db.Prepare(
        "INSERT INTO step_plugin_metrics (run_id, step, name, value) VALUES (?1, ?2, ?3, ?4)");
    for (const json& step : steps) {
      const json& metrics = Member(step, "metrics");
      if (!metrics.is_object()) continue;
      for (const auto& [name, value] : metrics.items()) {
        insert.BindInt64(1, run_id);
        BindJsonValue(insert, 2, Member(step, "step"));
        BindJsonValue(insert, 3, json(name));
        BindJsonValue(insert, 4, value);
        insert.Run();
      }
    }
  }
  const json& figures = Member(result, "plugin_metrics");
  if (figures.is_object()) {
    SqliteStatement insert =
        db.Prepare("INSERT INTO plugin_metrics (run_id, name, value) VALUES (?1, ?2, ?3)");
    for (const auto& [name, value] : figures.items()) {
      insert.BindInt64(1, run_id);
      BindJsonValue(insert, 2, json(name));
      BindJsonValue(insert, 3, value);
      insert.Run();
    }
  }
}

std::vector<std::string> StoredColumns(const std::string& table) {
  const std::vector<Field>* fields = nullptr;
  if (table == "run_metrics") fields = &RunMetricsFields();
  if (table == "environments") fields = &EnvironmentFields();
  if (table == "run_ranks") fields = &RankFields();
  std::vector<std::string> columns;
  if (fields != nullptr) {
    for (const Field& field : *fields) columns.emplace_back(field.column);
  }
  return columns;
}

}  // namespace memsweep::results
