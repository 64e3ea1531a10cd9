#include "core/results/schema.h"

#include <string>

#include "core/results/results_error.h"

namespace memsweep::results {
namespace {

// Version 1: experiments, their runs, everything a run measured.
constexpr const char* kVersion1 = R"sql(
CREATE TABLE experiments (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL,
  source_path TEXT NOT NULL,
  file_text   TEXT NOT NULL,
  created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX experiments_by_name ON experiments(name, created_at);
CREATE INDEX experiments_by_created_at ON experiments(created_at);

CREATE TABLE runs (
  id            INTEGER PRIMARY KEY,
  experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
  cell_hash     TEXT NOT NULL,
  cell_index    INTEGER NOT NULL,
  repeat        INTEGER NOT NULL DEFAULT 0,
  seed          INTEGER,
  status        TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'running', 'ok', 'oom', 'failed', 'timeout')),
  error         TEXT,
  config_json   TEXT NOT NULL DEFAULT '{}',
  params_json   TEXT NOT NULL DEFAULT '{}',
  started_at    TEXT,
  finished_at   TEXT,
  worker_pid    INTEGER,
  UNIQUE (experiment_id, cell_hash)
);
CREATE INDEX runs_by_experiment ON runs(experiment_id, cell_index, repeat);

CREATE TABLE run_plugins (
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq     INTEGER NOT NULL,
  slot    TEXT NOT NULL,
  name    TEXT NOT NULL,
  version TEXT,
  PRIMARY KEY (run_id, seq)
);
CREATE INDEX run_plugins_by_name ON run_plugins(slot, name);

-- Figures strategies recorded themselves (RunContext::record), summed over the run.
CREATE TABLE plugin_metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name   TEXT NOT NULL,
  value  REAL,
  PRIMARY KEY (run_id, name)
);

CREATE TABLE environments (
  run_id           INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  hostname         TEXT,
  cpu_model        TEXT,
  cores            INTEGER,
  threads          INTEGER,
  torch_version    TEXT,
  blas_library     TEXT,
  blas_kind        TEXT,
  gemm_backend     TEXT,
  memsweep_version TEXT,
  git_revision     TEXT
);

CREATE TABLE step_metrics (
  run_id               INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step                 INTEGER NOT NULL,
  loss                 REAL,
  tokens               INTEGER,
  positions            INTEGER,
  seconds              REAL,
  lr                   REAL,
  grad_norm            REAL,
  peak_allocated_bytes INTEGER,
  PRIMARY KEY (run_id, step)
);

CREATE TABLE memory_timeline (
  run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq             INTEGER NOT NULL,
  step            INTEGER,
  stage           TEXT,
  seconds         REAL,
  allocated_bytes INTEGER,
  reserved_bytes  INTEGER,
  peak_bytes      INTEGER,
  PRIMARY KEY (run_id, seq)
);

CREATE TABLE phase_memory (
  run_id            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  phase             TEXT NOT NULL,
  peak_bytes        INTEGER,
  model_state_bytes INTEGER,
  activations_bytes INTEGER,
  PRIMARY KEY (run_id, phase)
);

CREATE TABLE run_metrics (
  run_id                  INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  steps_completed         INTEGER,
  measured_steps          INTEGER,
  tokens_per_s            REAL,
  step_time_median_s      REAL,
  step_time_p90_s         REAL,
  flops_per_token         REAL,
  peak_flops              REAL,
  mfu                     REAL,
  final_loss              REAL,
  padding_fraction        REAL,
  parameters              INTEGER,
  wall_seconds            REAL,
  baseline_bytes          INTEGER,
  peak_allocated_bytes    INTEGER,
  peak_reserved_bytes     INTEGER,
  peak_rss_bytes          INTEGER,
  params_bytes            INTEGER,
  grads_bytes             INTEGER,
  optimizer_bytes         INTEGER,
  activations_bytes       INTEGER,
  saved_activations_bytes INTEGER,
  allocations             INTEGER,
  oom_requested_bytes     INTEGER,
  oom_stage               TEXT
);
)sql";

// Version 2: loss-equivalence verification. What a run needs to be compared with a reference
// (its plugins' math-preserving flags, its compute dtype, its resolved configuration), which cell
// it is compared with (runs.reference_hash), and the verdicts. Runs recorded by version 1 keep
// NULL in the new columns: their verdict is "n/a" (recorded without the flags).
constexpr const char* kVersion2 = R"sql(
ALTER TABLE run_plugins ADD COLUMN math_preserving INTEGER;
ALTER TABLE run_metrics ADD COLUMN compute_dtype TEXT;
ALTER TABLE run_metrics ADD COLUMN resolved_config_json TEXT;
ALTER TABLE runs ADD COLUMN reference_hash TEXT;

CREATE TABLE verification (
  run_id             INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  reference_run_id   INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  verdict            TEXT NOT NULL
                     CHECK (verdict IN ('reference', 'pass', 'fail', 'close', 'differs', 'n/a')),
  expected           TEXT
                     CHECK (expected IN ('equivalent', 'not math-preserving', 'config differs')),
  reason             TEXT NOT NULL DEFAULT '',
  compute_dtype      TEXT,
  tolerance_rel      REAL,
  steps_compared     INTEGER,
  max_abs_deviation  REAL,
  max_rel_deviation  REAL,
  max_deviation_step INTEGER,
  bitwise_equal      INTEGER,
  verified_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX verification_by_reference ON verification(reference_run_id);
)sql";

// Version 3: one row per rank of a multi-process run (device.world_size > 1), written with the
// run by rank 0's result; run_metrics keeps rank 0's figures and the group's throughput.
constexpr const char* kVersion3 = R"sql(
CREATE TABLE run_ranks (
  run_id               INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank                 INTEGER NOT NULL,
  status               TEXT,
  error                TEXT,
  steps_completed      INTEGER,
  peak_allocated_bytes INTEGER,
  peak_reserved_bytes  INTEGER,
  peak_rss_bytes       INTEGER,
  params_bytes         INTEGER,
  grads_bytes          INTEGER,
  optimizer_bytes      INTEGER,
  activations_bytes    INTEGER,
  host_pool_peak_bytes INTEGER,
  comm_seconds         REAL,
  comm_bytes           INTEGER,
  comm_calls           INTEGER,
  PRIMARY KEY (run_id, rank)
);
)sql";

// Version 4: LibTorch 2.11 from the PyPI wheel. What the build and the machine offer: ATen's CPU
// kernel level, whether CUDA is built in and its library versions. gemm_backend (memsweep's old
// sgemm_ forwarding) stays for older rows and is no longer written.
constexpr const char* kVersion4 = R"sql(
ALTER TABLE environments ADD COLUMN cpu_capability TEXT;
ALTER TABLE environments ADD COLUMN cuda_build INTEGER;
ALTER TABLE environments ADD COLUMN cuda_runtime TEXT;
ALTER TABLE environments ADD COLUMN cudnn_version TEXT;
ALTER TABLE environments ADD COLUMN nccl_version TEXT;
)sql";

// Version 5: CUDA devices. Where a run trained (device, emulated GPU, budget, allocator
// settings), the caching allocator's figures beside the CPU's (active, retries, OOMs,
// fragmentation), the host pool's peak, the GPU in the environment, and per-step figures of
// strategies (fp16 loss scale, skipped steps); and how the CPU ran bf16 products (bf16_gemm).
constexpr const char* kVersion5 = R"sql(
ALTER TABLE run_metrics ADD COLUMN device TEXT;
ALTER TABLE run_metrics ADD COLUMN emulated_gpu TEXT;
ALTER TABLE run_metrics ADD COLUMN budget_bytes INTEGER;
ALTER TABLE run_metrics ADD COLUMN device_total_bytes INTEGER;
ALTER TABLE run_metrics ADD COLUMN allocator_settings TEXT;
ALTER TABLE run_metrics ADD COLUMN peak_active_bytes INTEGER;
ALTER TABLE run_metrics ADD COLUMN alloc_retries INTEGER;
ALTER TABLE run_metrics ADD COLUMN oom_count INTEGER;
ALTER TABLE run_metrics ADD COLUMN fragmentation_bytes INTEGER;
ALTER TABLE run_metrics ADD COLUMN host_pool_peak_bytes INTEGER;
ALTER TABLE environments ADD COLUMN device TEXT;
ALTER TABLE environments ADD COLUMN gpu_name TEXT;
ALTER TABLE environments ADD COLUMN gpu_memory_bytes INTEGER;
ALTER TABLE environments ADD COLUMN compute_capability TEXT;
ALTER TABLE environments ADD COLUMN cuda_driver TEXT;
ALTER TABLE environments ADD COLUMN bf16_gemm TEXT;
ALTER TABLE step_metrics ADD COLUMN skipped INTEGER;
CREATE TABLE step_plugin_metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step   INTEGER NOT NULL,
  name   TEXT NOT NULL,
  value  REAL,
  PRIMARY KEY (run_id, step, name)
);
)sql";

ResultsError NewerThanKnown(const std::string& path, int64_t version, int64_t known) {
  return ResultsError(path, "schema version " + std::to_string(version) +
                                " is newer than this memsweep knows (" + std::to_string(known) +
                                "); use a newer memsweep");
}

// Version 6: how the CPU ran fp32 products (fp32_gemm: LibTorch's MKL kernels or oneDNN's).
constexpr const char* kVersion6 = R"sql(
ALTER TABLE environments ADD COLUMN fp32_gemm TEXT;
)sql";

// Version 7: what offload and MFU readers look for first, appended to run_summary: the host
// pool's peak (offloaded state, outside the device budget) and whether the run's MFU stands
// (run_metrics.peak_flops_check: '' the run stayed below its GEMM peak, 'remeasured' it beat the
// kept calibration, which was measured again, 'above_peak' its MFU is above 1 even so;
// docs/metrics.md "MFU"). Runs recorded before keep NULL there.
constexpr const char* kVersion7 = R"sql(
ALTER TABLE run_metrics ADD COLUMN peak_flops_check TEXT;
)sql";

// Version 8: adapters (the adapter slot). How many of the run's parameters train and the bytes
// of the frozen ones (params_bytes = trainable_params_bytes + frozen_params_bytes), in
// run_metrics and run_ranks, and the first two appended to run_summary.
constexpr const char* kVersion8 = R"sql(
ALTER TABLE run_metrics ADD COLUMN trainable_params INTEGER;
ALTER TABLE run_metrics ADD COLUMN trainable_params_bytes INTEGER;
ALTER TABLE run_metrics ADD COLUMN frozen_params_bytes INTEGER;
ALTER TABLE run_ranks ADD COLUMN trainable_params_bytes INTEGER;
ALTER TABLE run_ranks ADD COLUMN frozen_params_bytes INTEGER;
)sql";

// Version 9: the largest single allocation of a run (the loss slot made the logits a choice):
// its bytes, stage, step, micro-batch and what it was, in run_metrics; bytes, stage and what
// appended to run_summary.
constexpr const char* kVersion9 = R"sql(
ALTER TABLE run_metrics ADD COLUMN largest_allocation_bytes INTEGER;
ALTER TABLE run_metrics ADD COLUMN largest_allocation_stage TEXT;
ALTER TABLE run_metrics ADD COLUMN largest_allocation_step INTEGER;
ALTER TABLE run_metrics ADD COLUMN largest_allocation_micro_batch INTEGER;
ALTER TABLE run_metrics ADD COLUMN largest_allocation_what TEXT;
)sql";

// Version 10: every run's estimate (memsweep estimate's figures for the same cell, computed by
// memsweep run beside the measurement): run_estimates, and in run_summary the estimated peaks,
// the estimate's status and its signed error on peak allocated bytes relative to the measured.
constexpr const char* kVersion10 = R"sql(
CREATE TABLE run_estimates (
  run_id               INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  status               TEXT NOT NULL,
  target               TEXT,
  device               TEXT,
  budget_bytes         INTEGER,
  peak_allocated_bytes INTEGER,
  peak_reserved_bytes  INTEGER,
  peak_stage           TEXT,
  peak_step            INTEGER,
  largest_allocation_bytes INTEGER,
  blas_workspace_bytes INTEGER,
  oom_requested_bytes  INTEGER,
  message              TEXT,
  seconds              REAL
);
)sql";

// Version 11: a run's allocation history ([experiment] memory_history), the pickle PyTorch's
// memory viewer opens (docs/snapshot.md), written by `memsweep snapshot`.
constexpr const char* kVersion11 = R"sql(
CREATE TABLE memory_snapshots (
  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  format TEXT NOT NULL,
  events INTEGER NOT NULL,
  bytes  BLOB NOT NULL
);
)sql";

// Version 12: the rows a run trained (docs/metrics.md, "Short rows").
constexpr const char* kVersion12 = R"sql(
ALTER TABLE run_metrics ADD COLUMN row_length_mean REAL;
ALTER TABLE run_metrics ADD COLUMN row_length_max INTEGER;
ALTER TABLE run_metrics ADD COLUMN tokens_per_row REAL;
)sql";

// The views as this version declares them, made anew after any migration (each migration
// changes tables only): run_summary, one row per run with what people query first (docs/results.md).
// Columns are only ever appended, so that queries by position keep working across versions.
constexpr const char* kCurrentViews = R"sql(
DROP VIEW IF EXISTS run_summary;
CREATE VIEW run_summary AS
SELECT
  e.name                 AS experiment,
  r.id                   AS run_id,
  r.cell_hash            AS cell_hash,
  r.cell_index           AS cell_index,
  r.repeat               AS repeat,
  r.status               AS status,
  r.error                AS error,
  r.params_json          AS params,
  m.peak_allocated_bytes AS peak_allocated_bytes,
  m.peak_reserved_bytes  AS peak_reserved_bytes,
  m.peak_rss_bytes       AS peak_rss_bytes,
  m.params_bytes         AS params_bytes,
  m.grads_bytes          AS grads_bytes,
  m.optimizer_bytes      AS optimizer_bytes,
  m.activations_bytes    AS activations_bytes,
  m.tokens_per_s         AS tokens_per_s,
  m.mfu                  AS mfu,
  m.final_loss           AS final_loss,
  m.step_time_median_s   AS step_time_median_s,
  m.padding_fraction     AS padding_fraction,
  r.experiment_id        AS experiment_id,
  r.seed                 AS seed,
  m.steps_completed      AS steps_completed,
  m.wall_seconds         AS wall_seconds,
  r.started_at           AS started_at,
  r.finished_at          AS finished_at,
  m.compute_dtype        AS compute_dtype,
  v.verdict              AS verdict,
  v.max_rel_deviation    AS max_rel_deviation,
  m.host_pool_peak_bytes AS host_pool_peak_bytes,
  m.peak_flops_check     AS peak_flops_check,
  m.trainable_params     AS trainable_params,
  m.frozen_params_bytes  AS frozen_params_bytes,
  m.largest_allocation_bytes AS largest_allocation_bytes,
  m.largest_allocation_stage AS largest_allocation_stage,
  m.largest_allocation_what  AS largest_allocation_what,
  x.peak_allocated_bytes AS estimated_peak_allocated_bytes,
  x.peak_reserved_bytes  AS estimated_peak_reserved_bytes,
  CASE WHEN r.status = 'ok' AND x.status IN ('fits', 'estimated') AND m.peak_allocated_bytes > 0
       THEN (x.peak_allocated_bytes - m.peak_allocated_bytes) * 1.0 / m.peak_allocated_bytes
  END                    AS estimate_error,
  x.status               AS estimate_status,
  m.row_length_mean      AS row_length_mean,
  m.row_length_max       AS row_length_max,
  m.tokens_per_row       AS tokens_per_row
FROM runs AS r
JOIN experiments AS e ON e.id = r.experiment_id
LEFT JOIN run_metrics AS m ON m.run_id = r.id
LEFT JOIN verification AS v ON v.run_id = r.id
LEFT JOIN run_estimates AS x ON x.run_id = r.id;
)sql";

}  // namespace

const char* SchemaViews() { return kCurrentViews; }

const std::vector<Migration>& SchemaMigrations() {
  static const std::vector<Migration> kMigrations = {{1, kVersion1}, {2, kVersion2},
                                                     {3, kVersion3}, {4, kVersion4},
                                                     {5, kVersion5}, {6, kVersion6},
                                                     {7, kVersion7}, {8, kVersion8},
                                                     {9, kVersion9}, {10, kVersion10},
                                                     {11, kVersion11}, {12, kVersion12}};
  return kMigrations;
}

void RefuseNewerSchema(SqliteConnection& db, const std::vector<Migration>& migrations) {
  const int64_t latest = migrations.empty() ? 0 : migrations.back().version;
  const int64_t seen = db.IntegerPragma("user_version");
  if (seen > latest) throw NewerThanKnown(db.path(), seen, latest);
}

void MigrateSchema(SqliteConnection& db, const std::vector<Migration>& migrations,
                   const char* views) {
  const int64_t latest = migrations.empty() ? 0 : migrations.back().version;
  // Cheap check first, so that opening an up-to-date file takes no write lock.
  const int64_t seen = db.IntegerPragma("user_version");
  if (seen > latest) throw NewerThanKnown(db.path(), seen, latest);
  if (seen == latest) return;

  ImmediateTransaction transaction(db);
  const int64_t current = db.IntegerPragma("user_version");  // another process may have migrated
  if (current > latest) throw NewerThanKnown(db.path(), current, latest);
  if (current == latest) return;  // the transaction rolls back: nothing was written
  for (const Migration& migration : migrations) {
    if (migration.version <= current) continue;
    db.Execute(migration.sql);
  }
  if (views != nullptr) db.Execute(views);
  db.Execute("PRAGMA user_version = " + std::to_string(latest));
  transaction.Commit();
}

void CheckSchemaVersion(SqliteConnection& db, int64_t expected_version) {
  const int64_t version = db.IntegerPragma("user_version");
  if (version == expected_version) return;
  if (version == 0) {
    throw ResultsError(db.path(), "not a memsweep results database (no schema)");
  }
  if (version > expected_version) throw NewerThanKnown(db.path(), version, expected_version);
  throw ResultsError(db.path(), "schema version " + std::to_string(version) + " is older than " +
                                    std::to_string(expected_version) +
                                    "; open it read-write once (e.g. run a sweep) to migrate it");
}

}  // namespace memsweep::results
