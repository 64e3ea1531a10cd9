#include "core/results/run_result_store.h"

#include <string>
#include <vector>

namespace memsweep::results {
namespace {

using nlohmann::json;

// One column filled from `document[section][key]` (`section` empty: the document itself).
struct Field {
  const char* column;
  const char* section;
  const char* key;
};

const std::vector<Field>& RunMetricsFields() {
  static const std::vector<Field> kFields = {
      {"steps_completed", "summary", "steps_completed"},
      {"measured_steps", "summary", "measured_steps"},
      {"tokens_per_s", "summary", "tokens_per_s"},
      {"step_time_median_s", "summary", "step_time_median_s"},
      {"step_time_p90_s", "summary", "step_time_p90_s"},
      {"flops_per_token", "summary", "flops_per_token"},
      {"peak_flops", "summary", "peak_flops"},
      {"mfu", "summary", "mfu"},
      {"final_loss", "summary", "final_loss"},
      {"padding_fraction", "summary", "padding_fraction"},
      {"parameters", "summary", "parameters"},
      {"wall_seconds", "summary", "wall_seconds"},
      {"baseline_bytes", "memory", "baseline_bytes"},
      {"peak_allocated_bytes", "memory", "peak_allocated_bytes"},
      {"peak_reserved_bytes", "memory", "peak_reserved_bytes"},
      {"peak_rss_bytes", "memory", "peak_rss_bytes"},
      {"params_bytes", "memory", "params_bytes"},
      {"grads_bytes", "memory", "grads_bytes"},
      {"optimizer_bytes", "memory", "optimizer_bytes"},
      {"activations_bytes", "memory", "activations_bytes"},
      {"saved_activations_bytes", "memory", "saved_activations_bytes"},
      {"allocations", "memory", "allocations"},
      {"peak_active_bytes", "memory", "peak_active_bytes"},
      {"alloc_retries", "memory", "alloc_retries"},
      {"oom_count", "memory", "oom_count"},
      {"fragmentation_bytes", "memory", "fragmentation_bytes"},
      {"host_pool_peak_bytes", "memory", "host_pool_peak_bytes"},
      {"device", "device", "device"},
      {"emulated_gpu", "device", "emulated_gpu"},
      {"budget_bytes", "device", "budget_bytes"},
      {"device_total_bytes", "device", "device_total_bytes"},
      {"allocator_settings", "device", "allocator_settings"},
      {"oom_requested_bytes", "oom", "requested_bytes"},
      {"oom_stage", "oom", "stage"},
      {"compute_dtype", "", "compute_dtype"},
      {"resolved_config_json", "", "config"}};
  return kFields;
}

const std::vector<Field>& EnvironmentFields() {
  static const std::vector<Field> kFields = {
      {"hostname", "environment", "hostname"},
      {"cpu_model", "environment", "cpu_model"},
      {"cores", "environment", "cores"},
      {"threads", "environment", "threads"},
      {"torch_version", "environment", "torch_version"},
      {"blas_library", "environment", "blas_library"},
      {"blas_kind", "environment", "blas_kind"},
      {"cpu_capability", "environment", "cpu_capability"},
      {"bf16_gemm", "environment", "bf16_gemm"},
      {"cuda_build", "environment", "cuda_build"},
      {"cuda_runtime", "environment", "cuda_runtime"},
      {"cudnn_version", "environment", "cudnn_version"},
      {"nccl_version", "environment", "nccl_version"},
      {"memsweep_version", "environment", "memsweep_version"},
      {"git_revision", "environment", "git_revision"},
      {"device", "environment", "device"},
      {"gpu_name", "environment", "gpu_name"},
      {"gpu_memory_bytes", "environment", "gpu_memory_bytes"},
      {"compute_capability", "environment", "compute_capability"},
      {"cuda_driver", "environment", "cuda_driver"}};
  return kFields;
}

const std::vector<Field>& RankFields() {
  static const std::vector<Field> kFields = {
      {"rank", "", "rank"},
      {"status", "", "status"},
      {"error", "", "error"},
      {"steps_completed", "", "steps_completed"},
      {"peak_allocated_bytes", "", "peak_allocated_bytes"},
      {"peak_reserved_bytes", "", "peak_reserved_bytes"},
      {"peak_rss_bytes", "", "peak_rss_bytes"},
      {"params_bytes", "", "params_bytes"},
      {"grads_bytes", "", "grads_bytes"},
      {"optimizer_bytes", "", "optimizer_bytes"},
      {"activations_bytes", "", "activations_bytes"},
      {"host_pool_peak_bytes", "", "host_pool_peak_bytes"},
      {"comm_seconds", "", "comm_seconds"},
      {"comm_bytes", "", "comm_bytes"},
      {"comm_calls", "", "comm_calls"}};
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
                                  "plugin_metrics", "run_ranks", "step_plugin_metrics"};
  for (const char* table : kTables) {
    SqliteStatement remove = db.Prepare(std::string("DELETE FROM ") + table + " WHERE run_id = ?1");
    remove.BindInt64(1, run_id);
    remove.Run();
  }
}

void StoreRunDetails(SqliteConnection& db, int64_t run_id, const json& result) {
  if (result.contains("environment")) {
    InsertOne(db, "environments", EnvironmentFields(), run_id, result);
  }
  InsertOne(db, "run_metrics", RunMetricsFields(), run_id, result);
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

}  // namespace memsweep::results
