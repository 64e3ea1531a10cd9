#include "packing/pack/packed_batch_source.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

#include "core/data/byte_tokenizer.h"
#include "plugins/packing/packing_test_support.h"

namespace memsweep::plugins::packing {
namespace {

using testing_support::AllSequences;
using testing_support::DevilsDictionary;
using testing_support::RowOf;
using testing_support::Sorted;
using testing_support::SpansOf;

PackOptions Options(int64_t window, PackingAlgorithm algorithm = PackingAlgorithm::kFirstFitDecreasing,
                    data::LongDocuments long_documents = data::LongDocuments::kTruncate,
                    RowLayout layout = RowLayout::kPacked) {
  PackOptions options;
  options.window = window;
  options.algorithm = algorithm;
  options.long_documents = long_documents;
  options.layout = layout;
  return options;
}

// With a window of the whole corpus the first rows hold exactly one epoch: every document (or
// piece of one) appears exactly once, token for token.
TEST(PackedBatchSourceTest, EveryTokenOfEveryDocumentAppearsExactlyOnce) {
  for (auto long_documents : {data::LongDocuments::kTruncate, data::LongDocuments::kSplit}) {
    for (auto algorithm :
         {PackingAlgorithm::kFirstFitDecreasing, PackingAlgorithm::kBestFitDecreasing}) {
      // One row per micro-batch: the first window's rows are then served without any of the next.
      const data::DataConfig config = DevilsDictionary(/*seq_len=*/256, /*micro_batch_size=*/1);
      const int64_t documents =
          data::LoadTokenSequences(config, long_documents).Count();  // pieces, when split
      PackedBatchSource one_epoch(config, /*seed=*/3,
                                  Options(documents, algorithm, long_documents));
      const auto expected = Sorted(AllSequences(one_epoch.Sequences()));
      std::vector<std::vector<int32_t>> seen;
      int64_t positions = 0;
      while (positions < one_epoch.Sequences().TotalPositions()) {
        const data::Batch batch = one_epoch.Next();
        for (auto& span : SpansOf(batch)) seen.push_back(std::move(span));
        positions += batch.real_tokens;
      }
      EXPECT_EQ(positions, one_epoch.Sequences().TotalPositions());
      EXPECT_EQ(one_epoch.WindowsPacked(), 1);
      EXPECT_EQ(Sorted(seen), expected);
    }
  }
}

TEST(PackedBatchSourceTest, RowsHoldAtMostSeqLenPositionsAndEveryRowIsFull) {
  const data::DataConfig config = DevilsDictionary(/*seq_len=*/128, /*micro_batch_size=*/8);
  PackedBatchSource source(config, /*seed=*/1, Options(200));
  for (int i = 0; i < 40; ++i) {
    const data::Batch batch = source.Next();
    ASSERT_EQ(batch.Rows(), 8);
    ASSERT_LE(batch.Length(), 128);
    EXPECT_EQ(batch.positions, 8 * batch.Length());
    EXPECT_EQ(batch.real_tokens, batch.targets.ne(data::kIgnoreIndex).sum().item<int64_t>());
  }
  const data::Batch fixed =
      PackedBatchSource(DevilsDictionary(128, 8, data::Padding::kMaxLength), 1, Options(200))
          .Next();
  EXPECT_EQ(fixed.Length(), 128);
}

// Positions restart at 0 where a document begins (its BOS) and count up by one inside it; segment
// ids go 0, 1, 2 ... along the row and change exactly where a document begins or padding starts.
TEST(PackedBatchSourceTest, PositionIdsRestartAndSegmentIdsMarkEachDocument) {
  PackedBatchSource source(DevilsDictionary(256, 4), /*seed=*/5, Options(300));
  int64_t multi_document_rows = 0;
  for (int i = 0; i < 30; ++i) {
    const data::Batch batch = source.Next();
    ASSERT_TRUE(batch.segment_ids.defined());
    for (int64_t r = 0; r < batch.Rows(); ++r) {
      const auto inputs = RowOf(batch.input_ids, r);
      const auto targets = RowOf(batch.targets, r);
      const auto positions = RowOf(batch.position_ids, r);
      const auto segments = RowOf(batch.segment_ids, r);
      EXPECT_EQ(positions[0], 0);
      EXPECT_EQ(segments[0], 0);
      for (size_t t = 1; t < inputs.size(); ++t) {
        const bool padding = targets[t] == data::kIgnoreIndex;
        const bool new_document = inputs[t] == data::kBosId;
        const bool padding_starts = padding && targets[t - 1] != data::kIgnoreIndex;
        if (new_document) {
          EXPECT_EQ(positions[t], 0) << "row " << r << " position " << t;
        } else {
          EXPECT_EQ(positions[t], positions[t - 1] + 1) << "row " << r << " position " << t;
        }
        EXPECT_EQ(segments[t], segments[t - 1] + ((new_document || padding_starts) ? 1 : 0))
            << "row " << r << " position " << t;
      }
      for (size_t t = 1; t < inputs.size(); ++t) {
        if (inputs[t] == data::kBosId) {
          ++multi_document_rows;
          break;
        }
      }
    }
  }
  EXPECT_GT(multi_document_rows, 0);  // the check above saw document boundaries
}

// The last token of a document never predicts the first of the next: no target is a BOS, and
// inside a document every target is the next input.
TEST(PackedBatchSourceTest, TargetsNeverCrossADocumentBoundary) {
  PackedBatchSource source(DevilsDictionary(512, 4), /*seed=*/9, Options(400));
  for (int i = 0; i < 30; ++i) {
    const data::Batch batch = source.Next();
    EXPECT_FALSE(batch.targets.eq(data::kBosId).any().item<bool>());
    const int64_t length = batch.Length();
    const at::Tensor same_segment = batch.segment_ids.slice(1, 0, length - 1)
                                        .eq(batch.segment_ids.slice(1, 1, length))
                                        .logical_and(batch.targets.slice(1, 1, length)
                                                         .ne(data::kIgnoreIndex));
    const at::Tensor shifted = batch.targets.slice(1, 0, length - 1)
                                   .eq(batch.input_ids.slice(1, 1, length))
                                   .logical_or(same_segment.logical_not());
    EXPECT_TRUE(shifted.all().item<bool>()) << "micro-batch " << i;
  }
}

TEST(PackedBatchSourceTest, SameSeedSameRowsOtherSeedOtherRows) {
  const data::DataConfig config = DevilsDictionary(256, 4);
  PackedBatchSource a(config, 7, Options(100));
  PackedBatchSource b(config, 7, Options(100));
  PackedBatchSource c(config, 8, Options(100));
  bool differs = false;
  for (int i = 0; i < 150; ++i) {  // several windows and beyond the first epoch
    const data::Batch x = a.Next(), y = b.Next(), z = c.Next();
    ASSERT_TRUE(at::equal(x.input_ids, y.input_ids)) << i;
    ASSERT_TRUE(at::equal(x.segment_ids, y.segment_ids)) << i;
    differs = differs || x.Length() != z.Length() || !at::equal(x.input_ids, z.input_ids);
  }
  EXPECT_TRUE(differs);
}

// layout = padded serves the documents of each packed micro-batch one per row.
TEST(PackedBatchSourceTest, PaddedLayoutServesTheSameDocumentsPerMicroBatch) {
  const data::DataConfig config = DevilsDictionary(256, 3);
  PackedBatchSource packed(config, 11, Options(150));
  PackedBatchSource padded(config, 11,
                           Options(150, PackingAlgorithm::kFirstFitDecreasing,
                                   data::LongDocuments::kTruncate, RowLayout::kPadded));
  for (int i = 0; i < 60; ++i) {
    const data::Batch p = packed.Next();
    const data::Batch u = padded.Next();
    EXPECT_FALSE(u.segment_ids.defined());
    EXPECT_GE(u.Rows(), p.Rows());
    EXPECT_EQ(u.real_tokens, p.real_tokens);
    EXPECT_EQ(Sorted(SpansOf(u)), Sorted(SpansOf(p))) << "micro-batch " << i;
  }
}

// The point of packing: on the bundled corpus, padded rows are ~30% padding at seq_len 256;
// packed rows are under 2%.
TEST(PackedBatchSourceTest, PackedRowsAreAlmostAllRealTokens) {
  const data::DataConfig config = DevilsDictionary(256, 8);
  PackedBatchSource packed(config, 1, Options(1000));
  PackedBatchSource padded(config, 1,
                           Options(1000, PackingAlgorithm::kFirstFitDecreasing,
                                   data::LongDocuments::kTruncate, RowLayout::kPadded));
  int64_t real = 0, positions = 0, padded_real = 0, padded_positions = 0;
  for (int i = 0; i < 80; ++i) {
    const data::Batch p = packed.Next();
    const data::Batch u = padded.Next();
    real += p.real_tokens;
    positions += p.positions;
    padded_real += u.real_tokens;
    padded_positions += u.positions;
  }
  EXPECT_LT(1.0 - static_cast<double>(real) / positions, 0.02);
  EXPECT_GT(1.0 - static_cast<double>(padded_real) / padded_positions, 0.1);
}

TEST(PackedBatchSourceTest, RejectsAnEmptyWindow) {
  EXPECT_THROW(PackedBatchSource(DevilsDictionary(256, 4), 1, Options(0)), std::invalid_argument);
}

}  // namespace
}  // namespace memsweep::plugins::packing
