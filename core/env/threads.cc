#include "core/env/threads.h"

#include <ATen/Parallel.h>
#include <omp.h>
#include <sched.h>

namespace memsweep::env {

int AvailableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int count = CPU_COUNT(&set);
  return count > 0 ? count : 1;
}

int SetThreads(int threads) {
  const int count = threads > 0 ? threads : AvailableCores();
  at::set_num_threads(count);
  omp_set_num_threads(count);
  return count;
}

}  // namespace memsweep::env
