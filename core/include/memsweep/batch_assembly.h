// Batch assembly: builds a Batch (batch.h) from rows of token spans, the one place where the
// layout of inputs, targets, position ids and segment ids is decided for every batch source.
//
//   std::vector<std::vector<TokenSpan>> rows = {{{doc_a, 5}, {doc_b, 3}}, {{doc_c, 9}}};
//   Batch batch = AssembleBatch(rows, /*length=*/8, /*with_segments=*/true);
//
// A span of n tokens fills n - 1 consecutive positions of its row: inputs are its tokens
// 0..n-2, targets its tokens 1..n-1, position ids restart at 0. So a target never leaves its span:
// the last token of one span is never asked to predict the first of the next, and every position
// that holds a span takes a loss. The rest of the row is padding (kPadId inputs, kIgnoreIndex
// targets, position ids continuing the numbering of the row's last span, so a row with one span
// has position ids 0..length-1).
//
// Segment ids (with_segments): span k of a row has segment id k and padding the id after the
// last span, so ids never decrease along a row and each span attends only to itself.
#pragma once

#include <cstdint>
#include <vector>

#include "memsweep/batch.h"

namespace memsweep::data {

struct TokenSpan {
  const int32_t* tokens = nullptr;
  int64_t count = 0;  // at least 2: one input and its target
  int64_t Positions() const { return count - 1; }
};

// Positions a row of spans fills.
int64_t RowPositions(const std::vector<TokenSpan>& row);

// [rows.size(), length] batch. Throws std::invalid_argument if a row needs more than `length`
// positions or a span has fewer than 2 tokens. Without segments, segment_ids stays undefined.
Batch AssembleBatch(const std::vector<std::vector<TokenSpan>>& rows, int64_t length,
                    bool with_segments);

}  // namespace memsweep::data
