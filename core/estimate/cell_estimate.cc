#include "core/estimate/cell_estimate.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config/config_error.h"
#include "core/config/run_config_loader.h"
#include "core/env/cpu_gemm.h"
#include "core/env/cuda_probe.h"
#include "core/env/gpu_catalog.h"
#include "core/estimate/blas_workspaces.h"
#include "core/estimate/meta_attention.h"
#include "core/estimate/meta_communicator.h"
#include "core/estimate/meta_gradient_sums.h"
#include "core/estimate/meta_upcast_gemm.h"
#include "core/memory/byte_size.h"
#include "core/memory/rss.h"
#include "core/memory/tracking_allocator.h"
#include "core/train/row_preview.h"
#include "core/train/trainer.h"
#include "memsweep/stage.h"

namespace memsweep::estimate {
namespace {

bool NamesACatalogGpu(const EstimateTarget& target) {
  return !target.device.empty() && env::FindGpu(target.device) != nullptr;
}

// The device type a cell's estimate stands for: its own; an "auto" cell's the one it took (in
// `memsweep run`), else the one it would take here — CUDA where this machine has a usable GPU, as
// [device] type = "auto" decides when a run loads the cell.
// A GPU of the catalog named with --device makes a cell without an explicit type = "cpu" a CUDA
// cell: the question is that card, with its caching allocator and cuBLAS workspaces, not the
// CPU's simulation of its size.
std::string StandsFor(const experiment::Cell& cell, const EstimateTarget& target) {
  const std::optional<std::string> written = cell.document["device"]["type"].value<std::string>();
  if (NamesACatalogGpu(target) && written.value_or("auto") == "auto") return "cuda";
  const std::string type = written.value_or("cpu");
  if (type != "auto") return type;
  if (!target.auto_device.empty()) return target.auto_device;
  return env::ProbeCuda().usable() ? "cuda" : "cpu";
}

// The cell's document with the estimate's device, for as long as this lives: the CPU's reading
// of [device] (the meta device takes its place after loading, so a CUDA cell needs no GPU here),
// and the target's size. A CUDA cell's allocator is LibTorch's caching allocator whichever plugin
// it names: an estimate of one with allocator/default (LibTorch's defaults on CUDA) reserves
// through allocator/caching's emulation of it with the same defaults.
// The edits are made in the cell's own document and undone on destruction, so that every value
// keeps its file position (a copy of a TOML node loses it) and an error points at its line.
class EstimateDocument {
 public:
  EstimateDocument(const experiment::Cell& cell, const EstimateTarget& target)
      : doc_(const_cast<toml::table&>(cell.document)) {  // restored by the destructor
    const bool cuda = StandsFor(cell, target) == "cuda";
    toml::table& device = TableAt(doc_, "device");
    if (cuda) {
      toml::table& allocator = TableAt(TableAt(doc_, "strategies"), "allocator");
      if (allocator["plugin"].value_or(std::string("default")) == "default") {
        Replace(allocator, "plugin", toml::value<std::string>("caching"));
      }
    }
    Replace(device, "type", toml::value<std::string>("cpu"));
    Replace(device, "index", std::nullopt);
    if (!target.device.empty()) {
      Replace(device, "memory_budget", std::nullopt);
      Replace(device, "emulate_context", std::nullopt);
      Replace(device, "emulate", toml::value<std::string>(target.device));
    }
  }
  EstimateDocument(const EstimateDocument&) = delete;
  EstimateDocument& operator=(const EstimateDocument&) = delete;
  ~EstimateDocument() {
    for (auto edit = edits_.rbegin(); edit != edits_.rend(); ++edit) {
      edit->table->erase(edit->key);
      if (toml::node* saved = edit->saved.get("v")) {
        edit->table->insert(toml::key(edit->key, edit->key_region), std::move(*saved));
      }
    }
  }
  const toml::table& document() const { return doc_; }

 private:
  struct Edit {
    toml::table* table;
    std::string key;
    toml::table saved;  // the node the edit replaced, under "v" (none: the key was absent)
    toml::source_region key_region;
  };
  // table[key] = value (nullopt: erased), the node it held kept to put back.
  void Replace(toml::table& table, const std::string& key,
               std::optional<std::unique_ptr<toml::node>> value) {
    Edit edit{&table, key, {}, {}};
    const auto it = table.find(key);
    if (it == table.end() && !value) return;  // nothing to erase
    if (it != table.end()) {
      edit.key_region = it->first.source();
      edit.saved.insert("v", std::move(it->second));
      table.erase(it);
    }
    if (value) table.insert(key, std::move(**value));
    edits_.push_back(std::move(edit));
  }
  template <typename T>
  void Replace(toml::table& table, const std::string& key, toml::value<T> value) {
    Replace(table, key,
            std::optional<std::unique_ptr<toml::node>>(
                std::make_unique<toml::value<T>>(std::move(value))));
  }
  void Replace(toml::table& table, const std::string& key, std::nullopt_t) {
    Replace(table, key, std::optional<std::unique_ptr<toml::node>>());
  }
  toml::table& TableAt(toml::table& parent, const std::string& key) {
    if (toml::table* table = parent[key].as_table()) return *table;
    Replace(parent, key,
            std::optional<std::unique_ptr<toml::node>>(std::make_unique<toml::table>()));
    return *parent[key].as_table();
  }

  toml::table& doc_;
  std::vector<Edit> edits_;
};

// Where the run's peak allocated bytes fall: the stage (and step) whose own peak is highest.
void FindPeak(CellEstimate& e) {
  int64_t best = -1;
  for (const train::TimelinePoint& p : e.run.timeline) {
    if (p.peak_bytes > best) {
      best = p.peak_bytes;
      e.peak_stage = p.stage;
      e.peak_step = p.step;
    }
  }
}

// An operation without a meta kernel names itself so: "Could not run 'aten::x' with arguments
// from the 'Meta' backend", or "aten::x: attempted to run this operator with Meta tensors, but
// there was no fake impl or Meta kernel registered".
bool LacksMetaKernel(const std::string& error) {
  return error.find("'Meta' backend") != std::string::npos ||
         error.find("no fake impl or Meta kernel") != std::string::npos;
}

// The first plugin that refuses the device the estimate stands for, in the words `memsweep plan`
// uses on a machine with that device; "" when every plugin runs there.
std::string TargetRefusal(const plugin::StrategySet& strategies, c10::DeviceType target) {
  for (const plugin::ActiveStrategy& strategy : strategies) {
    std::string why;
    try {
      why = strategy.impl->DeviceRefusal(target);
    } catch (const std::exception& error) {
      why = error.what();
    }
    if (!why.empty()) {
      return "[strategies." + strategy.slot + "] plugin = \"" + strategy.name + "\" cannot run on the " +
             (target == c10::DeviceType::CUDA ? "CUDA device ([device] type = \"cuda\")"
                                              : "CPU device ([device] type = \"cpu\")") +
             ": " + why;
    }
  }
  return "";
}

// One run of the cell on the meta device (EstimateRun below decides a close oom with a second).
CellEstimate EstimateOnce(config::RunConfig cfg, c10::DeviceType target, int compute_capability);

}  // namespace

const char* EstimateStatusName(EstimateStatus status) {
  switch (status) {
    case EstimateStatus::kEstimated: return "estimated";
    case EstimateStatus::kFits: return "fits";
    case EstimateStatus::kOom: return "oom";
    case EstimateStatus::kUnsupported: return "unsupported";
    case EstimateStatus::kFailed: return "failed";
  }
  return "failed";
}

void CheckTarget(const EstimateTarget& target) {
  if (target.device.empty() || env::FindGpu(target.device) != nullptr) return;
  const std::optional<int64_t> bytes = memory::ParseBytes(target.device);
  if (bytes && *bytes > 0) return;
  std::string names;
  for (const std::string& name : env::GpuNames()) names += (names.empty() ? "" : ", ") + name;
  throw config::ConfigError("--device '" + target.device + "' is neither a GPU of the catalog (" +
                            names + "; docs/gpu-models.md) nor a size such as \"24GiB\"");
}

void CheckCell(const experiment::Cell& cell, const EstimateTarget& target) {
  const EstimateDocument document(cell, target);
  try {
    config::RunConfigFromTable(document.document(), cell.source, config::ReadFor::kEstimate);
  } catch (const config::ConfigError& e) {
    throw config::ConfigError(cell.InExperimentFile(e.what()));  // a cell file's: the user's
  }
}

CellEstimate EstimateCell(const experiment::Cell& cell, const EstimateTarget& target) {
  const bool cuda = StandsFor(cell, target) == "cuda";
  config::RunConfig cfg;
  {
    // Read, not validated: EstimateRun validates it on the meta device, creating the plugins
    // once (the plan's validation, CheckCell, created them once before).
    const EstimateDocument document(cell, target);
    cfg = config::ReadRunConfig(document.document(), cell.source, config::ReadFor::kEstimate);
  }
  CellEstimate e = EstimateRun(std::move(cfg), cuda ? c10::DeviceType::CUDA : c10::DeviceType::CPU,
                               target.compute_capability);
  e.message = cell.InExperimentFile(e.message);
  e.cell_index = cell.index;
  e.label = cell.Label();
  if (NamesACatalogGpu(target) && !cuda) {
    e.warnings.insert(e.warnings.begin(),
                      "the file says [device] type = \"cpu\": estimated as the CPU's simulation "
                      "of the " + target.device + "'s size (no caching-allocator rounding, no "
                      "cuBLAS workspaces); delete the line or set type = \"auto\" to estimate "
                      "the card itself");
  }
  return e;
}


CellEstimate EstimateRun(config::RunConfig cfg, c10::DeviceType target, int compute_capability) {
  CellEstimate e = EstimateOnce(cfg, target, compute_capability);
  // An oom whose failing request the card missed by under 1 % of its size: within the estimate's
  // error on reserved bytes against a real caching allocator. Whether the whole run fits a card
  // 1 % larger decides `marginal_oom` (the failing request may be followed by larger ones).
  if (e.status == EstimateStatus::kOom && e.run.oom && e.run.oom->short_bytes > 0 &&
      e.run.oom->short_bytes * 100 < e.budget_bytes) {
    cfg.device.memory_budget_bytes = e.budget_bytes + e.budget_bytes / 100;
    const CellEstimate larger = EstimateOnce(cfg, target, compute_capability);
    e.marginal_oom = larger.status == EstimateStatus::kFits;
    e.seconds += larger.seconds;
  }
  return e;
}

namespace {

CellEstimate EstimateOnce(config::RunConfig cfg, c10::DeviceType target, int compute_capability) {
  const auto start = std::chrono::steady_clock::now();
  CellEstimate e;
  e.target = target == c10::DeviceType::CUDA ? "cuda" : "cpu";
  SetMetaTarget(target);
  const auto done = [&]() -> CellEstimate {
    e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::move(e);
  };
  if (cfg.device.emulate) {
    const env::GpuModel* gpu = env::FindGpu(cfg.device.emulate->name);
    if (compute_capability == 0 && gpu != nullptr) compute_capability = gpu->compute_capability;
    e.device = cfg.device.emulate->name == "custom"
                   ? memory::FormatBytes(cfg.device.emulate->total_bytes)
                   : cfg.device.emulate->name;
  } else if (cfg.device.memory_budget_bytes) {
    e.device = "budget " + memory::FormatBytes(*cfg.device.memory_budget_bytes);
  }
  e.budget_bytes = cfg.device.memory_budget_bytes.value_or(0);
  const int world = std::max(1, cfg.device.world_size);
  e.world_size = world;
  cfg.device.type = "meta";
  // Each rank runs alone, with a communicator that moves no data (meta_communicator.h).
  std::optional<train::RunResult> first_failure;
  int failed_rank = -1;
  for (int rank = 0; rank < world; ++rank) {
    config::ValidatedRun run;
    try {
      run = config::ValidateRun(cfg);
    } catch (const config::ConfigError& error) {
      e.status = EstimateStatus::kUnsupported;
      e.message = error.what();
      return done();
    }
    if (rank == 0) {
      const data::DataConfig& d = run.config.data;
      e.parameters = run.config.model.llama.ParameterCount();
      e.trainable_params = run.adapter.trainable_params;
      e.seq_len = d.seq_len;
      e.tokens_per_micro_batch = d.micro_batch_size * d.seq_len;
      e.tokens_per_step = e.tokens_per_micro_batch * d.accumulation_steps * world;
    }
    if (!run.oom_before_run.empty()) {  // no step could run: nothing to measure
      e.status = EstimateStatus::kOom;
      e.message = run.oom_before_run;
      e.oom_before_run = true;
      return done();
    }
    // A cell's plugins are validated on meta tensors; the ones that cannot run on the device the
    // estimate stands for (attention/flash on CUDA: memsweep's CPU kernel; precision/fp16 on the
    // CPU) are refused as `memsweep plan` would refuse them.
    if (const std::string refusal = TargetRefusal(run.strategies, target); !refusal.empty()) {
      e.status = EstimateStatus::kUnsupported;
      e.message = refusal;
      return done();
    }
    train::RunResult result;
    {
      train::Trainer trainer(run.config, std::move(run.strategies));
      std::unique_ptr<dist::CountingCommunicator> comm;
      if (world > 1) {
        comm = MakeMetaCommunicator(rank, world, target == c10::DeviceType::CUDA);
        trainer.SetCommunicator(comm.get());
      }
      std::optional<ScopedBlasWorkspaces> workspaces;
      std::optional<ScopedMetaUpcastGemm> upcast;
      const ScopedInPlaceGradientSums gradient_sums;  // the engine's in-place sums, as on a device
      if (target == c10::DeviceType::CUDA) {
        e.blas_workspace_bytes = CublasWorkspaceBytes(compute_capability);
        workspaces.emplace(e.blas_workspace_bytes);
      } else if (env::ChooseBf16Gemm(run.config.device.gemm) == env::Bf16Gemm::kUpcast) {
        upcast.emplace();  // the CPU run's bf16 products widen their operands here
      }
      result = trainer.Run();
      if (workspaces && rank == 0) e.blas_workspaces = workspaces->Taken();
    }
    // What outlived the run (the plugins' own tensors, the workspaces) went back to the backend
    // the run had installed: the next rank starts from an empty device, as a real rank does.
    memory::TrackingAllocator::Instance().EmptyEveryCache();
    e.host_pool_peak_bytes = std::max(e.host_pool_peak_bytes, result.dist.host_pool_peak_bytes);
    if (world > 1) {
      e.ranks.push_back({rank, result.status, result.error, result.memory.peak_allocated_bytes,
                         result.memory.peak_reserved_bytes, result.dist.host_pool_peak_bytes});
    }
    if (result.status != train::RunStatus::kOk && !first_failure) {
      first_failure = result;
      failed_rank = rank;
    }
    if (rank == 0) e.run = std::move(result);
  }
  // Host memory: every rank's process, offloaded state and, on the CPU, device bytes.
  const int64_t process_bytes = memory::PeakRssBytes();
  const bool on_host = target == c10::DeviceType::CPU;
  if (e.ranks.empty()) {
    e.host_bytes = process_bytes + e.host_pool_peak_bytes +
                   (on_host ? e.run.memory.peak_reserved_bytes : 0);
  } else {
    for (const RankEstimate& r : e.ranks) {
      e.host_bytes += process_bytes + r.host_pool_peak_bytes + (on_host ? r.peak_reserved_bytes : 0);
    }
  }
  e.host_available_bytes = memory::HostAvailableBytes();
  // The cell's outcome: rank 0's figures; the first rank that failed decides the status.
  if (first_failure && failed_rank > 0) {
    e.run.status = first_failure->status;
    e.run.error = "rank " + std::to_string(failed_rank) + ": " + first_failure->error;
    e.run.oom = first_failure->oom;
  }
  FindPeak(e);
  // The rows the run trained: its summary's, as a measured run's (rank 0's).
  const train::RunSummary& trained = e.run.summary;
  if (const std::string w =
          train::ShortRowsWarning(trained.row_length_mean, trained.row_length_max, e.seq_len);
      !w.empty()) {
    e.warnings.push_back(w);
  }
  switch (e.run.status) {
    case train::RunStatus::kOk:
      e.status = e.budget_bytes > 0 ? EstimateStatus::kFits : EstimateStatus::kEstimated;
      break;
    case train::RunStatus::kOom:
      e.status = EstimateStatus::kOom;
      e.message = e.run.error;
      if (e.run.oom) {  // where the request failed rather than the completed stages' peak
        e.peak_stage = e.run.oom->stage;
        bool set_up = false;
        for (Stage s : {Stage::kEnvironment, Stage::kModel, Stage::kData, Stage::kOptimizer}) {
          set_up = set_up || e.peak_stage == StageName(s);
        }
        const size_t steps = failed_rank > 0 ? first_failure->steps.size() : e.run.steps.size();
        e.peak_step = set_up ? -1 : static_cast<int64_t>(steps);
      }
      break;
    case train::RunStatus::kFailed:
      e.status = LacksMetaKernel(e.run.error) ? EstimateStatus::kUnsupported : EstimateStatus::kFailed;
      e.message = e.run.error;
      break;
  }
  return done();
}

}  // namespace

}  // namespace memsweep::estimate
