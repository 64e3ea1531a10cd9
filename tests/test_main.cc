// Test entry point: installs memsweep's tracking allocator before any tensor exists, as the
// memsweep binary does, so that every suite measures through it; and turns the token cache off
// (tests tokenize corpora with tokenizers in temporary folders, whose cache files would pile up
// in the user's cache; TokenCacheTest turns it on in a folder of its own).
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/env/threads.h"
#include "core/memory/tracking_allocator.h"

int main(int argc, char** argv) {
  memsweep::memory::TrackingAllocator::Install();
  memsweep::env::SetThreads(2);
  setenv("MEMSWEEP_TOKEN_CACHE", "off", /*overwrite=*/0);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
