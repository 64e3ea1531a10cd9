// The sanitizers' default options for memsweep's executables in a MEMSWEEP_SANITIZE build (the
// `asan` preset): compiled into each executable, so that the memsweep binary, the workers it
// starts and the test binaries run alike however they are started (ctest, a test's child
// process, gtest discovery at build time). ASAN_OPTIONS / UBSAN_OPTIONS / LSAN_OPTIONS in the
// environment still override any of them. docs/building.md, "Sanitizers", explains each.
#ifndef MEMSWEEP_SANITIZER_DIR
#error "MEMSWEEP_SANITIZER_DIR names tools/sanitizers"
#endif

extern "C" {

// handle_segv=0: memsweep tells a worker that crashed from one that failed by the signal that
// ended it (a test injects segfaults on purpose); ASan would turn SIGSEGV into exit code 1.
// protect_shadow_gap=0: the CUDA driver maps memory where ASan's shadow gap would be.
const char* __asan_default_options() {
  return "handle_segv=0:protect_shadow_gap=0:detect_leaks=1:strict_string_checks=1:"
         "detect_stack_use_after_return=0:check_initialization_order=1";
}

const char* __ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1:suppressions=" MEMSWEEP_SANITIZER_DIR "/ubsan.supp";
}

const char* __lsan_default_options() {
  return "suppressions=" MEMSWEEP_SANITIZER_DIR "/lsan.supp:print_suppressions=0";
}

}  // extern "C"
