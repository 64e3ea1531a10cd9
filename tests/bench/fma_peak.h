// The machine's fp32 peak, measured: every thread runs independent fused multiply-adds on
// registers only (no memory traffic), with the widest vectors the CPU supports. This is the
// ceiling a GEMM can approach; GEMM efficiency is reported against it.
#pragma once

#include <string>

namespace memsweep::bench {

struct FmaPeak {
  double flops = 0.0;  // FLOP/s over all threads (one FMA = 2 FLOPs per lane)
  std::string isa;     // "avx512f" or "avx2+fma"
  int threads = 0;
};

FmaPeak MeasureFmaPeak(int threads);

}  // namespace memsweep::bench
