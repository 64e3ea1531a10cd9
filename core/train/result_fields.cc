#include "core/train/result_fields.h"

namespace memsweep::train {

const char* UnitName(Unit unit) {
  switch (unit) {
    case Unit::kCount: return "count";
    case Unit::kBytes: return "bytes";
    case Unit::kSeconds: return "s";
    case Unit::kTokensPerSecond: return "tokens/s";
    case Unit::kFlopsPerSecond: return "FLOP/s";
    case Unit::kFlopsPerToken: return "FLOP/token";
    case Unit::kTokens: return "tokens";
    case Unit::kFraction: return "fraction";
    case Unit::kNats: return "nats";
    case Unit::kText: return "text";
    case Unit::kFlag: return "flag";
  }
  return "?";
}

const std::vector<ResultField<RunSummary>>& SummaryFields() {
  using S = RunSummary;
  static const std::vector<ResultField<S>> kFields = {
      {"steps_completed", Unit::kCount, &S::steps_completed},
      {"measured_steps", Unit::kCount, &S::measured_steps},
      {"tokens_per_s", Unit::kTokensPerSecond, &S::tokens_per_s},
      {"step_time_median_s", Unit::kSeconds, &S::step_time_median_s},
      {"step_time_p90_s", Unit::kSeconds, &S::step_time_p90_s},
      {"flops_per_token", Unit::kFlopsPerToken, &S::flops_per_token},
      {"peak_flops", Unit::kFlopsPerSecond, &S::peak_flops},
      {"mfu", Unit::kFraction, &S::mfu},
      {"peak_flops_check", Unit::kText, &S::peak_flops_check},
      {"final_loss", Unit::kNats, &S::final_loss},
      {"padding_fraction", Unit::kFraction, &S::padding_fraction},
      {"row_length_mean", Unit::kTokens, &S::row_length_mean},
      {"row_length_max", Unit::kTokens, &S::row_length_max},
      {"tokens_per_row", Unit::kTokens, &S::tokens_per_row},
      {"parameters", Unit::kCount, &S::parameters},
      {"trainable_params", Unit::kCount, &S::trainable_params},
      {"wall_seconds", Unit::kSeconds, &S::wall_seconds}};
  return kFields;
}

const std::vector<ResultField<MemoryBreakdown>>& MemoryFields() {
  using M = MemoryBreakdown;
  constexpr uint8_t kBoth = kRunMetrics | kRankRow;
  static const std::vector<ResultField<M>> kFields = {
      {"baseline_bytes", Unit::kBytes, &M::baseline_bytes},
      {"peak_allocated_bytes", Unit::kBytes, &M::peak_allocated_bytes, kBoth},
      {"peak_reserved_bytes", Unit::kBytes, &M::peak_reserved_bytes, kBoth},
      {"peak_rss_bytes", Unit::kBytes, &M::peak_rss_bytes, kBoth},
      {"params_bytes", Unit::kBytes, &M::params_bytes, kBoth},
      {"trainable_params_bytes", Unit::kBytes, &M::trainable_params_bytes, kBoth},
      {"frozen_params_bytes", Unit::kBytes, &M::frozen_params_bytes, kBoth},
      {"grads_bytes", Unit::kBytes, &M::grads_bytes, kBoth},
      {"optimizer_bytes", Unit::kBytes, &M::optimizer_bytes, kBoth},
      {"activations_bytes", Unit::kBytes, &M::activations_bytes, kBoth},
      {"saved_activations_bytes", Unit::kBytes, &M::saved_activations_bytes},
      {"allocations", Unit::kCount, &M::allocations},
      {"peak_active_bytes", Unit::kBytes, &M::peak_active_bytes},
      {"alloc_retries", Unit::kCount, &M::alloc_retries},
      {"oom_count", Unit::kCount, &M::oom_count},
      {"fragmentation_bytes", Unit::kBytes, &M::fragmentation_bytes},
      {"largest_allocation_bytes", Unit::kBytes, &M::largest_allocation_bytes},
      {"largest_allocation_stage", Unit::kText, &M::largest_allocation_stage},
      {"largest_allocation_step", Unit::kCount, &M::largest_allocation_step},
      {"largest_allocation_micro_batch", Unit::kCount, &M::largest_allocation_micro_batch},
      {"largest_allocation_what", Unit::kText, &M::largest_allocation_what}};
  return kFields;
}

const std::vector<ResultField<RankFigures>>& RankFigureFields() {
  using R = RankFigures;
  static const std::vector<ResultField<R>> kFields = {
      {"host_pool_peak_bytes", Unit::kBytes, &R::host_pool_peak_bytes, kRunMetrics | kRankRow},
      {"comm_seconds", Unit::kSeconds, &R::comm_seconds, kRankRow},
      {"comm_bytes", Unit::kBytes, &R::comm_bytes, kRankRow},
      {"comm_calls", Unit::kCount, &R::comm_calls, kRankRow}};
  return kFields;
}

const std::vector<ResultField<DeviceFigures>>& DeviceFields() {
  using D = DeviceFigures;
  static const std::vector<ResultField<D>> kFields = {
      {"device", Unit::kText, &D::device},
      {"emulated_gpu", Unit::kText, &D::emulated_gpu},
      {"budget_bytes", Unit::kBytes, &D::budget_bytes},
      {"device_total_bytes", Unit::kBytes, &D::device_total_bytes},
      {"allocator_settings", Unit::kText, &D::allocator_settings}};
  return kFields;
}

const std::vector<ResultField<env::EnvironmentInfo>>& EnvironmentFields() {
  using E = env::EnvironmentInfo;
  static const std::vector<ResultField<E>> kFields = {
      {"hostname", Unit::kText, &E::hostname},
      {"cpu_model", Unit::kText, &E::cpu_model},
      {"cores", Unit::kCount, &E::cores},
      {"threads", Unit::kCount, &E::threads},
      {"torch_version", Unit::kText, &E::torch_version},
      {"blas_library", Unit::kText, &E::blas_library},
      {"blas_kind", Unit::kText, &E::blas_kind},
      {"cpu_capability", Unit::kText, &E::cpu_capability},
      {"bf16_gemm", Unit::kText, &E::bf16_gemm},
      {"fp32_gemm", Unit::kText, &E::fp32_gemm},
      {"cuda_build", Unit::kFlag, &E::cuda_build},
      {"cuda_runtime", Unit::kText, &E::cuda_runtime},
      {"cudnn_version", Unit::kText, &E::cudnn_version},
      {"nccl_version", Unit::kText, &E::nccl_version},
      {"memsweep_version", Unit::kText, &E::memsweep_version},
      {"git_revision", Unit::kText, &E::git_revision},
      {"device", Unit::kText, &E::device},
      {"gpu_name", Unit::kText, &E::gpu_name},
      {"gpu_memory_bytes", Unit::kBytes, &E::gpu_memory_bytes},
      {"compute_capability", Unit::kText, &E::compute_capability},
      {"cuda_driver", Unit::kText, &E::cuda_driver}};
  return kFields;
}

}  // namespace memsweep::train
