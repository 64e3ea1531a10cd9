#include "memsweep/batch_assembly.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "core/data/byte_tokenizer.h"

namespace memsweep::data {
namespace {

std::vector<int64_t> Row(const at::Tensor& matrix, int64_t row) {
  const at::Tensor values = matrix[row].contiguous();
  return std::vector<int64_t>(values.data_ptr<int64_t>(),
                              values.data_ptr<int64_t>() + values.numel());
}

constexpr int64_t I = kIgnoreIndex;

TEST(BatchAssemblyTest, PackedRowRestartsPositionsAndKeepsTargetsInsideEachSpan) {
  const std::vector<int32_t> a = {kBosId, 'a', 'b', kEosId};  // 3 positions
  const std::vector<int32_t> b = {kBosId, 'c', kEosId};       // 2 positions
  const Batch batch = AssembleBatch({{{a.data(), 4}, {b.data(), 3}}}, /*length=*/7,
                                    /*with_segments=*/true);
  ASSERT_EQ(batch.Rows(), 1);
  ASSERT_EQ(batch.Length(), 7);
  EXPECT_EQ(Row(batch.input_ids, 0),
            (std::vector<int64_t>{kBosId, 'a', 'b', kBosId, 'c', kPadId, kPadId}));
  // 'b' predicts EOS of its own document, never the BOS of the next one.
  EXPECT_EQ(Row(batch.targets, 0), (std::vector<int64_t>{'a', 'b', kEosId, 'c', kEosId, I, I}));
  EXPECT_EQ(Row(batch.position_ids, 0), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 3}));
  EXPECT_EQ(Row(batch.segment_ids, 0), (std::vector<int64_t>{0, 0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(batch.real_tokens, 5);
  EXPECT_EQ(batch.positions, 7);
}

TEST(BatchAssemblyTest, OneSpanPerRowHasNoSegmentsAndPositionsRunThroughPadding) {
  const std::vector<int32_t> a = {kBosId, 'a', kEosId};
  const std::vector<int32_t> b = {kBosId, 'b', 'c', 'd', kEosId};
  const Batch batch = AssembleBatch({{{a.data(), 3}}, {{b.data(), 5}}}, /*length=*/4,
                                    /*with_segments=*/false);
  EXPECT_FALSE(batch.segment_ids.defined());
  EXPECT_EQ(Row(batch.position_ids, 0), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(Row(batch.targets, 0), (std::vector<int64_t>{'a', kEosId, I, I}));
  EXPECT_EQ(batch.real_tokens, 2 + 4);
  EXPECT_EQ(batch.positions, 8);
  EXPECT_EQ(batch.targets.ne(kIgnoreIndex).sum().item<int64_t>(), batch.real_tokens);
}

TEST(BatchAssemblyTest, RejectsOverlongRowsAndSpansWithoutATarget) {
  const std::vector<int32_t> a = {kBosId, 'a', 'b', kEosId};
  EXPECT_THROW(AssembleBatch({{{a.data(), 4}}}, /*length=*/2, false), std::invalid_argument);
  EXPECT_THROW(AssembleBatch({{{a.data(), 1}}}, /*length=*/2, false), std::invalid_argument);
}

}  // namespace
}  // namespace memsweep::data
