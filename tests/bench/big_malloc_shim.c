/* A diagnostic for host memory (docs/estimate.md, "Not yet"; not built by CMake, not run by
 * ctest): preloaded into a memsweep process, it prints every request of 4 MiB or more to malloc,
 * posix_memalign, aligned_alloc or memalign with its callers, so that blocks taken outside the
 * tracking allocator (TrackingAllocator::allocate absent from the stack) can be told apart.
 *
 *   gcc -O1 -shared -fPIC tests/bench/big_malloc_shim.c -o /tmp/big_malloc_shim.so -ldl
 *   LD_PRELOAD=/tmp/big_malloc_shim.so memsweep worker --cell FILE --source EXP --result r.json \
 *     2>&1 | c++filt | less
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static __thread int inside; /* backtrace() may allocate: no report from within a report */

static void report(const char* what, size_t bytes) {
  if (bytes < ((size_t)4 << 20) || inside) return;
  inside = 1;
  void* frames[24];
  const int count = backtrace(frames, 24);
  char line[128];
  const int length = snprintf(line, sizeof line, "big-malloc %s %zu\n", what, bytes);
  if (write(2, line, (size_t)length) < 0) { /* nothing to do: stderr is gone */ }
  backtrace_symbols_fd(frames, count, 2);
  inside = 0;
}

void* malloc(size_t bytes) {
  static void* (*real)(size_t);
  if (!real) real = (void* (*)(size_t))dlsym(RTLD_NEXT, "malloc");
  report("malloc", bytes);
  return real(bytes);
}

int posix_memalign(void** out, size_t alignment, size_t bytes) {
  static int (*real)(void**, size_t, size_t);
  if (!real) real = (int (*)(void**, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
  report("posix_memalign", bytes);
  return real(out, alignment, bytes);
}

void* aligned_alloc(size_t alignment, size_t bytes) {
  static void* (*real)(size_t, size_t);
  if (!real) real = (void* (*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
  report("aligned_alloc", bytes);
  return real(alignment, bytes);
}

void* memalign(size_t alignment, size_t bytes) {
  static void* (*real)(size_t, size_t);
  if (!real) real = (void* (*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
  report("memalign", bytes);
  return real(alignment, bytes);
}
