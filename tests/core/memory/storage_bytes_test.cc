#include "core/memory/storage_bytes.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace memsweep::memory {
namespace {

TEST(StorageBytesTest, CountsSharedStorageOnce) {
  at::Tensor a = at::empty({100}, at::kFloat);
  at::Tensor b = at::empty({10, 10}, at::kDouble);
  EXPECT_EQ(DistinctStorageBytes({a, b}), 400 + 800);
  EXPECT_EQ(DistinctStorageBytes({a, a.view({10, 10}), a.narrow(0, 0, 5), b}), 1200);
  EXPECT_EQ(DistinctStorageBytes({at::Tensor(), a}), 400);
}

}  // namespace
}  // namespace memsweep::memory
