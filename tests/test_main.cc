// Test entry point: installs memsweep's tracking allocator before any tensor exists, as the
// memsweep binary does, so that every suite measures through it.
#include <gtest/gtest.h>

#include "core/env/threads.h"
#include "core/memory/tracking_allocator.h"

int main(int argc, char** argv) {
  memsweep::memory::TrackingAllocator::Install();
  memsweep::env::SetThreads(2);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
