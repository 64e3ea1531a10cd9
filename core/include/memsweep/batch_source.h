// BatchSource: where the training loop gets its micro-batches. The packing slot's plugin
// provides one (one document per row, packed rows, length buckets ...); Batcher (batcher.h) is
// the padding source most plugins build on.
//
//   std::unique_ptr<BatchSource> source = packing->MakeBatchSource(data_config, seed);
//   Batch batch = source->Next();
#pragma once

#include "memsweep/batch.h"

namespace memsweep::data {

class BatchSource {
 public:
  virtual ~BatchSource();
  virtual Batch Next() = 0;
};

}  // namespace memsweep::data
