// MEMSWEEP_HEAP_TRACE's figures (core/memory/rss.h): the glibc heap's in-use and mmapped bytes
// against a block of known size, the resident set against its touched pages, and the line it
// prints.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

#include "core/memory/rss.h"

namespace memsweep::memory {
namespace {

TEST(HeapReadingTest, ABlockOfKnownSizeIsInUseAndResidentOnceTouched) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer's allocator replaces glibc's malloc, whose figures "
                  "(mallinfo2) are under test";
#endif
  constexpr int64_t kBytes = int64_t{48} << 20;
  constexpr int64_t kSlack = int64_t{64} << 10;  // glibc's chunk headers and page rounding
  const HeapReading before = ReadHeap();
  char* block = static_cast<char*>(std::malloc(kBytes));
  ASSERT_NE(block, nullptr);
  const HeapReading allocated = ReadHeap();
  std::memset(block, 1, kBytes);
  const HeapReading touched = ReadHeap();
  // glibc serves it from an arena or by mmap, depending on its threshold: in one of the two.
  const int64_t held = (allocated.heap_in_use_bytes + allocated.mmapped_bytes) -
                       (before.heap_in_use_bytes + before.mmapped_bytes);
  EXPECT_GE(held, kBytes);
  EXPECT_LE(held, kBytes + kSlack);
  // VmRSS = RssAnon + RssFile + RssShmem (the kernel's own sum).
  EXPECT_GE(touched.resident_bytes, touched.resident_anon_bytes + touched.resident_file_bytes);
  std::free(block);
  const HeapReading freed = ReadHeap();
  EXPECT_LE(freed.heap_in_use_bytes + freed.mmapped_bytes,
            before.heap_in_use_bytes + before.mmapped_bytes + kSlack);
  // Fresh pages are resident once written, and they are anonymous memory. (A fresh mapping, not
  // malloc: once the tracking allocator is installed, glibc keeps freed heap pages resident, and
  // a malloc'd block may reuse them.)
  void* mapped = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  const HeapReading untouched = ReadHeap();
  std::memset(mapped, 1, kBytes);
  const HeapReading written = ReadHeap();
  EXPECT_GE(written.resident_anon_bytes - untouched.resident_anon_bytes, kBytes - kSlack);
  ::munmap(mapped, kBytes);
}

TEST(HeapReadingTest, TheTraceLineNamesEachFigure) {
  HeapReading r;
  r.resident_bytes = int64_t{583} << 20;
  r.resident_anon_bytes = int64_t{389} << 20;
  r.resident_file_bytes = int64_t{194} << 20;
  r.heap_bytes = int64_t{293} << 20;
  r.heap_in_use_bytes = int64_t{123} << 20;
  r.heap_free_bytes = int64_t{170} << 20;
  r.mmapped_bytes = int64_t{1} << 20;
  EXPECT_EQ(DescribeHeap(r),
            "resident 583.00 MiB (anonymous 389.00 MiB, files 194.00 MiB); glibc heap 293.00 MiB "
            "(123.00 MiB in use, 170.00 MiB free), mmapped 1.00 MiB");
}

}  // namespace
}  // namespace memsweep::memory
