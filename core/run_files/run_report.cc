#include "core/run_files/run_report.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <variant>

#include "core/memory/byte_size.h"
#include "core/train/result_fields.h"
#include "core/train/row_preview.h"

namespace memsweep::run_files {
namespace {

const char* RopeScalingName(model::RopeScaling::Kind kind) {
  switch (kind) {
    case model::RopeScaling::Kind::kNone: return "none";
    case model::RopeScaling::Kind::kLlama3: return "llama3";
    case model::RopeScaling::Kind::kLongRope: return "longrope";
  }
  return "?";
}

using memory::FormatBytes;

std::string Fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

// "  name<padded to 28> value\n", whatever the value's length.
void Row(std::ostringstream& out, const std::string& name, const std::string& value) {
  constexpr size_t kNameWidth = 28;
  out << "  " << name;
  if (name.size() < kNameWidth) out << std::string(kNameWidth - name.size(), ' ');
  out << ' ' << value << '\n';
}

const char* FormatName(data::DataFormat f) {
  switch (f) {
    case data::DataFormat::kJsonl: return "jsonl";
    case data::DataFormat::kText: return "text";
    case data::DataFormat::kTokens: return "tokens";
  }
  return "?";
}

}  // namespace

std::string FormatRunSummary(const config::RunConfig& cfg, const train::RunResult& r) {
  std::ostringstream out;
  const auto& s = r.summary;
  const auto& m = r.memory;
  out << "memsweep run '" << cfg.experiment.name << "': " << train::RunStatusName(r.status);
  if (!r.error.empty()) out << "\n  " << r.error;
  out << "\n\n";
  const std::string model_name =
      cfg.model.config.empty() ? cfg.model.preset
                               : cfg.model.llama.model_type + " from " + cfg.model.config;
  // The run counts its model's parameters once a step completed: a run that failed before (while
  // building the model, or in its first step) shows the model it was configured with — the
  // count from the config's shapes, as `memsweep plan` gives it — never "0 parameters".
  if (s.parameters > 0) {
    Row(out, "model", model_name + " (" + std::to_string(s.parameters) + " parameters)");
  } else {
    Row(out, "model", model_name + " (configured with " +
                          std::to_string(cfg.model.llama.ParameterCount()) +
                          " parameters; no step completed)");
  }
  Row(out, "batch", std::to_string(r.data.micro_batch_size) + " x " +
                        std::to_string(r.data.accumulation_steps) + " accumulation, seq_len " +
                        std::to_string(r.data.seq_len));
  if (s.row_length_max > 0) {
    Row(out, "rows trained", Fixed(s.row_length_mean, 1) + " positions on average, longest " +
                                 std::to_string(s.row_length_max) + ", " +
                                 Fixed(s.tokens_per_row, 1) + " real tokens per row");
    const std::string short_rows =
        train::ShortRowsWarning(s.row_length_mean, s.row_length_max, r.data.seq_len);
    if (!short_rows.empty()) out << "  warning: " << short_rows << "\n";
  }
  std::string plugins;
  for (const auto& p : r.plugins) {
    if (p.slot == "callbacks") plugins += (plugins.empty() ? "" : ", ") + p.slot + "=" + p.name;
  }
  for (const auto& p : r.plugins) {
    if (p.slot != "callbacks") plugins += (plugins.empty() ? "" : ", ") + p.slot + "=" + p.name;
  }
  Row(out, "strategies", plugins);
  const std::string budget =
      cfg.device.memory_budget_bytes ? FormatBytes(*cfg.device.memory_budget_bytes) : "none";
  const std::string emulated =
      cfg.device.emulate ? " (emulating " + cfg.device.emulate->name + ")" : std::string();
  if (r.device.device.rfind("cuda", 0) == 0) {
    Row(out, "device", r.device.device + " " + r.environment.gpu_name + ", budget " + budget +
                           emulated);
  } else {
    Row(out, "device", cfg.device.type + ", " + std::to_string(r.environment.threads) +
                           " threads, budget " + budget + emulated);
  }
  Row(out, "libtorch", r.environment.torch_version + ", CPU kernels " +
                           r.environment.cpu_capability + ", BLAS " + r.environment.blas_kind +
                           ", fp32 GEMM " + r.environment.fp32_gemm + ", bf16 GEMM " +
                           r.environment.bf16_gemm +
                           (r.environment.cuda_build ? ", CUDA " + r.environment.cuda_runtime
                                                     : std::string(", no CUDA")));
  Row(out, "steps", std::to_string(s.steps_completed) + " (" + std::to_string(s.measured_steps) +
                        " measured after warm-up)");
  out << "\n throughput\n";
  Row(out, "tokens/s", Fixed(s.tokens_per_s, 1));
  Row(out, "step time median / p90", Fixed(s.step_time_median_s * 1e3, 1) + " ms / " +
                                         Fixed(s.step_time_p90_s * 1e3, 1) + " ms");
  // An MFU above 100 % measures the calibration, not the run: marked, never printed as a fact.
  std::string mfu = Fixed(100.0 * s.mfu, 1) + " % of " + Fixed(s.peak_flops / 1e9, 1) +
                    " GFLOP/s measured GEMM peak";
  if (s.peak_flops_check == "above_peak") {
    mfu += " (!) above the peak: the GEMM calibration is low, not the run fast; re-measure it "
           "on an idle machine with `memsweep calibrate`";
  } else if (s.peak_flops_check == "remeasured") {
    mfu += " (re-measured: the run beat the kept figure)";
  }
  Row(out, "MFU", mfu);
  Row(out, "padding fraction", Fixed(100.0 * s.padding_fraction, 1) + " %");
  out << "\n loss\n";
  if (!r.steps.empty()) {
    Row(out, "first / final", Fixed(r.steps.front().loss, 4) + " / " + Fixed(s.final_loss, 4));
  }
  out << "\n memory\n";
  Row(out, "peak allocated", FormatBytes(m.peak_allocated_bytes));
  Row(out, "peak reserved", FormatBytes(m.peak_reserved_bytes));
  Row(out, "fragmentation (reserved - allocated)", FormatBytes(m.fragmentation_bytes));
  if (m.alloc_retries > 0) Row(out, "allocation retries", std::to_string(m.alloc_retries));
  if (r.dist.host_pool_peak_bytes > 0) {
    Row(out, "host: offloaded state peak", FormatBytes(r.dist.host_pool_peak_bytes));
  }
  Row(out, "peak RSS (process)", FormatBytes(m.peak_rss_bytes));
  Row(out, "parameters", FormatBytes(m.params_bytes));
  Row(out, "gradients", FormatBytes(m.grads_bytes));
  Row(out, "optimizer state", FormatBytes(m.optimizer_bytes));
  Row(out, "activations + temporaries", FormatBytes(m.activations_bytes));
  Row(out, "saved activations / fwd", FormatBytes(m.saved_activations_bytes));
  for (const auto& phase : m.phases) {
    Row(out, std::string("peak in ") + phase.phase,
        FormatBytes(phase.peak_bytes) + " (" + FormatBytes(phase.activations_bytes) +
            " beyond model state)");
  }
  if (r.oom) {
    out << "\n out of memory\n";
    Row(out, "stage", r.oom->stage);
    Row(out, "failed request", FormatBytes(r.oom->requested_bytes));
  }
  return out.str();
}

nlohmann::json RunConfigToJson(const config::RunConfig& cfg) {
  const auto& l = cfg.model.llama;
  nlohmann::json j;
  j["experiment"] = {{"name", cfg.experiment.name},
                     {"steps", cfg.experiment.steps},
                     {"warmup_steps", cfg.experiment.warmup_steps},
                     {"seed", cfg.experiment.seed}};
  if (cfg.experiment.memory_history > 0) {
    j["experiment"]["memory_history"] = cfg.experiment.memory_history;
  }
  j["model"] = {{"preset", cfg.model.preset},
                {"vocab_size", l.vocab_size},
                {"hidden_size", l.hidden_size},
                {"intermediate_size", l.intermediate_size},
                {"num_hidden_layers", l.num_hidden_layers},
                {"num_attention_heads", l.num_attention_heads},
                {"num_key_value_heads", l.num_key_value_heads},
                {"rope_theta", l.rope_theta},
                {"rms_norm_eps", l.rms_norm_eps},
                {"tie_word_embeddings", l.tie_word_embeddings},
                {"max_position_embeddings", l.max_position_embeddings}};
  if (!cfg.model.config.empty()) {  // a Hugging Face config: what it adds to the shape
    j["model"].erase("preset");
    j["model"].update({{"config", cfg.model.config},
                       {"model_type", l.model_type},
                       {"head_dim", l.HeadDim()},
                       {"qkv_bias", l.qkv_bias},
                       {"o_bias", l.o_bias},
                       {"mlp_bias", l.mlp_bias},
                       {"partial_rotary_factor", l.partial_rotary_factor},
                       {"sliding_window", l.sliding_window},
                       {"rope_scaling", RopeScalingName(l.rope_scaling.kind)}});
  }
  if (!cfg.model.weights.empty()) j["model"]["weights"] = cfg.model.weights;
  j["data"] = {{"path", cfg.data.path}, {"format", FormatName(cfg.data.format)}};
  if (cfg.data.train_on == data::TrainOn::kCompletion) j["data"]["train_on"] = "completion";
  if (!cfg.data.tokenizer.empty()) j["data"]["tokenizer"] = cfg.data.tokenizer;
  j["strategies"] = nlohmann::json::array();
  for (const auto& choice : cfg.strategies) {
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [name, value] : choice.params.values()) {
      std::visit([&params, &name = name](const auto& v) { params[name] = v; }, value);
    }
    j["strategies"].push_back({{"slot", choice.slot},
                               {"plugin", choice.plugin},
                               {"version", choice.version},
                               {"params", params}});
  }
  const auto& o = cfg.optimizer;
  j["optimizer"] = {{"lr", o.lr},         {"min_lr_ratio", o.min_lr_ratio},
                    {"lr_warmup_steps", o.lr_warmup_steps}, {"beta1", o.beta1},
                    {"beta2", o.beta2},   {"eps", o.eps},
                    {"weight_decay", o.weight_decay}, {"grad_clip", o.grad_clip}};
  j["device"] = {{"type", cfg.device.type}, {"threads", cfg.device.threads}};
  if (cfg.device.memory_budget_bytes) {
    j["device"]["memory_budget_bytes"] = *cfg.device.memory_budget_bytes;
  }
  return j;
}

nlohmann::json RunResultToJson(const config::RunConfig& cfg, const train::RunResult& r) {
  nlohmann::json j;
  j["status"] = train::RunStatusName(r.status);
  j["error"] = r.error;
  j["config"] = RunConfigToJson(cfg);
  j["batches"] = {{"micro_batch_size", r.data.micro_batch_size},
                  {"accumulation_steps", r.data.accumulation_steps},
                  {"seq_len", r.data.seq_len},
                  {"padding", r.data.padding == data::Padding::kLongest ? "longest" : "max_length"}};
  j["plugins"] = nlohmann::json::array();
  for (const auto& p : r.plugins) {
    j["plugins"].push_back({{"slot", p.slot},
                            {"name", p.name},
                            {"version", p.version},
                            {"math_preserving", p.math_preserving}});
  }
  j["compute_dtype"] = r.compute_dtype;
  j["plugin_metrics"] = r.plugin_metrics;
  j["environment"] = train::FieldsToJson(r.environment, train::EnvironmentFields());
  j["device"] = train::FieldsToJson(r.device, train::DeviceFields());
  j["summary"] = train::FieldsToJson(r.summary, train::SummaryFields());
  const auto& m = r.memory;
  j["memory"] = train::FieldsToJson(m, train::MemoryFields());
  j["memory"].update(train::FieldsToJson(r.dist, train::RankFigureFields()));
  for (const auto& p : m.phases) {
    j["memory"]["phases"].push_back({{"phase", p.phase},
                                     {"peak_bytes", p.peak_bytes},
                                     {"model_state_bytes", p.model_state_bytes},
                                     {"activations_bytes", p.activations_bytes}});
  }
  if (r.oom) {
    j["oom"] = {{"requested_bytes", r.oom->requested_bytes}, {"budget_bytes", r.oom->budget_bytes},
                {"allocated_bytes", r.oom->allocated_bytes}, {"reserved_bytes", r.oom->reserved_bytes},
                {"stage", r.oom->stage}, {"message", r.oom->message}};
  }
  j["steps"] = nlohmann::json::array();
  for (const auto& st : r.steps) {
    j["steps"].push_back({{"step", st.step},       {"loss", st.loss},
                          {"tokens", st.tokens},   {"positions", st.positions},
                          {"rows", st.rows},
                          {"seconds", st.seconds}, {"lr", st.lr},
                          {"grad_norm", st.grad_norm},
                          {"peak_allocated_bytes", st.peak_allocated_bytes},
                          {"skipped", st.skipped},
                          {"metrics", st.metrics}});
  }
  j["timeline"] = nlohmann::json::array();
  for (const auto& t : r.timeline) {
    j["timeline"].push_back({{"step", t.step},         {"stage", t.stage},
                             {"seconds", t.seconds},   {"allocated_bytes", t.allocated_bytes},
                             {"reserved_bytes", t.reserved_bytes}, {"peak_bytes", t.peak_bytes}});
  }
  return j;
}

void WriteFileAtomically(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path temporary = target.string() + ".tmp-" + std::to_string(::getpid());
  try {
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      out.close();
      if (!out) throw std::runtime_error("cannot write " + temporary.string());
    }
    fs::rename(temporary, target);
  } catch (...) {
    std::error_code ignored;
    fs::remove(temporary, ignored);  // nothing half-written stays behind
    throw;
  }
}

void WriteJsonFile(const std::string& path, const nlohmann::json& document) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  WriteFileAtomically(path, document.dump(2) + "\n");
}

}  // namespace memsweep::run_files
