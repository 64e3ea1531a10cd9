// Thread count for LibTorch's intra-op pool (and OpenMP, which oneDNN and OpenBLAS-openmp share).
// LibTorch's default is not always the core count (1.13 used one thread on these machines), so
// memsweep always sets it.
//
//   SetThreads(0);   // 0 = every core this process may run on
#pragma once

namespace memsweep::env {

// Number of cores this process may run on (sched_getaffinity), at least 1.
int AvailableCores();
// Sets the intra-op thread count; 0 means AvailableCores(). Returns the count set.
int SetThreads(int threads);

}  // namespace memsweep::env
