// CellEstimate: one cell's memory before a byte of it is allocated (`memsweep estimate`,
// docs/estimate.md). The cell's own training loop — the trainer, every plugin's hooks, the
// allocator slot's backend — runs on LibTorch's meta device (core/memory/meta_tracking.h): every
// tensor has its size and no data, so the run's allocation stream, and with it the peak, its
// breakdown, the largest allocation and the budget's verdict, are those of the real run, at the
// cost of the operations' shape arithmetic only.
//
//   estimate::EstimateTarget target;
//   target.device = "a10g";                       // or "24GiB", or "" for the cell's own
//   estimate::CellEstimate e = estimate::EstimateCell(cell, target);
//   if (e.status == estimate::EstimateStatus::kOom) std::cout << e.message;
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/run_config.h"
#include "core/experiment/cell.h"
#include "core/train/run_result.h"

namespace memsweep::estimate {

enum class EstimateStatus : uint8_t {
  kEstimated,    // the whole run estimated; no device size to check it against
  kFits,         // within the device's memory
  kOom,          // a request the device's memory cannot serve: `message` is the error a run prints
  kUnsupported,  // a plugin or setting the estimate cannot run: `message` says which and why
  kFailed,       // the estimate's run failed otherwise (`message`)
};
const char* EstimateStatusName(EstimateStatus status);  // "estimated", "fits", "oom", ...

struct EstimateTarget {
  // A GPU of the catalog ("a10g", docs/gpu-models.md) or a capacity ("24GiB"): replaces the
  // cell's [device] emulate and memory_budget. "": the cell's own (none: no verdict).
  std::string device;
  // For a CUDA cell, the compute capability (x 10) of the GPU that runs it: it sets the cuBLAS
  // workspaces' size (blas_workspaces.h). 0: the card `device` (or the cell's emulate) names,
  // else a card other than sm_90. `memsweep run` passes its own GPU's (an H200 emulating an
  // A10G takes the H200's workspaces).
  int compute_capability = 0;
  // The device a cell of `[device] type = "auto"` took where it ran ("cpu" or "cuda": `memsweep
  // run` passes its worker's); "" = the CPU, as on a machine without a GPU. Other types keep
  // their own.
  std::string auto_device;
};

// One rank of a cell of several ranks: its own run on the meta device.
struct RankEstimate {
  int rank = 0;
  train::RunStatus status = train::RunStatus::kOk;
  std::string message;  // the rank's error ("" when it ran through)
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t host_pool_peak_bytes = 0;  // offloaded state, outside the device budget
};

struct CellEstimate {
  int64_t cell_index = 0;
  std::string label;  // the cell's matrix values ("" for a single-cell experiment)
  EstimateStatus status = EstimateStatus::kEstimated;
  std::string message;     // kOom: the out-of-memory message; kUnsupported/kFailed: why
  std::string device;      // the GPU or capacity checked against ("" = none)
  std::string target = "cpu";  // the device the estimate stands for: the cell's [device] type
  int64_t budget_bytes = 0;  // the device's usable memory (0 = none)
  std::string peak_stage;  // where the peak allocated bytes fall
  int64_t peak_step = -1;
  // The estimate's run: memory breakdown, timeline, steps, oom. With several ranks rank 0's, as
  // a measured run's run_metrics keep rank 0's figures; `ranks` has each rank's peaks, and the
  // verdict is over every rank (the first that runs out names the status and message).
  train::RunResult run;
  int world_size = 1;
  std::vector<RankEstimate> ranks;  // every rank, in order (empty for one rank)
  int64_t host_pool_peak_bytes = 0;  // the highest rank's offloaded state (host memory)
  // An oom that a card 1 % larger would fit (the estimate run again at that size): within the
  // estimate's error on reserved bytes, so a real allocator's block choice decides.
  bool marginal_oom = false;
  // Host memory the cell's workers need together: per rank the process's own (its LibTorch, the
  // data: this estimating process's peak resident set stands for it), the offloaded state, and
  // on the CPU the device's bytes themselves (peak reserved). Against MemAvailable here.
  int64_t host_bytes = 0;
  int64_t host_available_bytes = 0;
  // CUDA targets: the cuBLAS workspaces the run took (blas_workspaces.h) and each one's bytes.
  int blas_workspaces = 0;
  int64_t blas_workspace_bytes = 0;
  double seconds = 0.0;    // how long the estimate took
  // The model's parameters and those that train (from the shapes, as `memsweep plan` counts).
  int64_t parameters = 0;
  int64_t trainable_params = 0;
  // Tokens as configured: a micro-batch's positions (micro_batch_size x seq_len) and an
  // optimizer step's (x accumulation x ranks). The rows the run trained may be shorter (rows).
  int64_t seq_len = 0;
  int64_t tokens_per_micro_batch = 0;
  int64_t tokens_per_step = 0;
  // (The rows the run trained: run.summary's row_length_mean and row_length_max.)
  // The device cannot hold the model's parameters (config::ValidatedRun::oom_before_run): an
  // oom found before the run, with no figures.
  bool oom_before_run = false;
  // What the reader must know beside the verdict ("" when nothing): rows well short of seq_len,
  // an estimate of the CPU's simulation where a GPU was named.
  std::vector<std::string> warnings;
};


// Checks `target.device` (throws config::ConfigError naming it and the GPUs known when it is
// neither a catalog name nor a size).
void CheckTarget(const EstimateTarget& target);

// Reads the cell as the estimate will (its [device] replaced as in EstimateCell): throws
// config::ConfigError for input a run would refuse too (the plan's validator).
void CheckCell(const experiment::Cell& cell, const EstimateTarget& target);

// The cell as a run on the meta device (any [device] type: the estimate needs no GPU).
CellEstimate EstimateCell(const experiment::Cell& cell, const EstimateTarget& target);

// A loaded configuration as a run on the meta device standing for `target` (the CPU or CUDA:
// which attention kernel sdpa takes, meta_attention.h); its [device] type is ignored and its
// budget, if any, is the device's size. What EstimateCell does after reading the cell.
// `compute_capability` as EstimateTarget's (CUDA only).
CellEstimate EstimateRun(config::RunConfig cfg, c10::DeviceType target = c10::DeviceType::CPU,
                         int compute_capability = 0);

}  // namespace memsweep::estimate
