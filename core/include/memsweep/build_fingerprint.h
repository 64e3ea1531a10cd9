// The build fingerprint of whatever includes this header: the host compiles it into libmemsweep,
// plugins compile it into themselves, and the two must match exactly (C++ ABI).
#pragma once

#include <torch/version.h>

#define MEMSWEEP_STRINGIFY_INNER(x) #x
#define MEMSWEEP_STRINGIFY(x) MEMSWEEP_STRINGIFY_INNER(x)

#if defined(__clang__)
#define MEMSWEEP_COMPILER "clang " MEMSWEEP_STRINGIFY(__clang_major__) "." MEMSWEEP_STRINGIFY(__clang_minor__)
#elif defined(__GNUC__)
#define MEMSWEEP_COMPILER "gcc " MEMSWEEP_STRINGIFY(__GNUC__) "." MEMSWEEP_STRINGIFY(__GNUC_MINOR__)
#else
#define MEMSWEEP_COMPILER "unknown"
#endif

#ifndef _GLIBCXX_USE_CXX11_ABI
#define MEMSWEEP_CXX11_ABI 0
#else
#define MEMSWEEP_CXX11_ABI _GLIBCXX_USE_CXX11_ABI
#endif

#define MEMSWEEP_BUILD_FINGERPRINT {TORCH_VERSION, MEMSWEEP_COMPILER, MEMSWEEP_CXX11_ABI}
