#include "core/env/nccl_build.h"

#ifndef MEMSWEEP_NCCL  // set by core/CMakeLists.txt when nccl.h was found
#define MEMSWEEP_NCCL 0
#endif

namespace memsweep::env {

bool NcclBuiltIn() { return MEMSWEEP_NCCL != 0; }

}  // namespace memsweep::env
