#include "core/comm/gloo_staging.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>

namespace memsweep::dist {
namespace {

using Clock = std::chrono::steady_clock;

int64_t Bytes(const at::Tensor& t) { return static_cast<int64_t>(t.numel() * t.element_size()); }

// Gloo in LibTorch 1.13 refused bf16 tensors ("Invalid scalar type"); 2.11's accepts them, but
// memsweep keeps this staging so that the numerics stay fixed across LibTorch versions: a sum of
// two ranks equals what bf16 accumulation of the same two gradients gives in one process. The
// staging buffers are bounded by running in pieces of kBf16Piece elements.
constexpr int64_t kBf16Piece = int64_t{1} << 20;

bool IsBf16(const at::Tensor& t) { return t.scalar_type() == at::kBFloat16; }
at::Tensor Bits(const at::Tensor& t) { return IsBf16(t) ? t.view(at::kHalf) : t; }

// The fp32 sum of rows [0, n) of `parts` (n x length), in row order. Each row is widened
// explicitly: `sum.add_(bf16 row)` would widen it too, into a temporary LibTorch's CPU kernels
// allocate and its meta kernels do not, so the estimate would miss it.
at::Tensor SumInRankOrder(const at::Tensor& parts) {
  at::Tensor sum = parts[0].to(at::kFloat);
  for (int64_t r = 1; r < parts.size(0); ++r) sum.add_(parts[r].to(at::kFloat));
  return sum;
}

// Calls fn on consecutive 1-D pieces of a contiguous tensor (views: writes reach the tensor).
template <typename Fn>
void InPieces(at::Tensor& tensor, Fn&& fn) {
  at::Tensor flat = tensor.view({-1});
  for (int64_t begin = 0; begin < flat.numel(); begin += kBf16Piece) {
    fn(flat.narrow(0, begin, std::min(kBf16Piece, flat.numel() - begin)));
  }
}

}  // namespace

template <typename Send>
void GlooStagedCommunicator::Run(int64_t bytes, Send&& send) {
  const auto begin = Clock::now();
  send();
  counters_.seconds += std::chrono::duration<double>(Clock::now() - begin).count();
  counters_.bytes += bytes;
  ++counters_.calls;
}

void GlooStagedCommunicator::AllReduceSum(at::Tensor& tensor) {
  if (IsBf16(tensor)) return InPieces(tensor, [&](at::Tensor piece) { AllReduceBf16(piece); });
  Run(Bytes(tensor), [&] { SendAllReduce(tensor); });
}

void GlooStagedCommunicator::Broadcast(at::Tensor& tensor, int root) {
  at::Tensor bits = Bits(tensor);
  // The root sends its tensor; the others only receive.
  Run(rank_ == root ? Bytes(tensor) : 0, [&] { SendBroadcast(bits, root); });
}

void GlooStagedCommunicator::AllGather(const at::Tensor& input, std::vector<at::Tensor>& outputs) {
  std::vector<at::Tensor> bits;
  for (const at::Tensor& o : outputs) bits.push_back(Bits(o));
  Run(Bytes(input), [&] { SendAllGather(bits, Bits(input)); });
}

void GlooStagedCommunicator::AllToAll(at::Tensor& output, at::Tensor& input) {
  // What this rank sends to the others (its own chunk stays local).
  const int64_t sent = Bytes(input) / world_ * (world_ - 1);
  at::Tensor out = Bits(output), in = Bits(input);
  Run(sent, [&] { SendAllToAll(out, in); });
}

void GlooStagedCommunicator::Barrier() {
  Run(0, [&] { SendBarrier(); });
}

void GlooStagedCommunicator::ReduceSum(at::Tensor& tensor, int root) {
  if (IsBf16(tensor)) return InPieces(tensor, [&](at::Tensor piece) { ReduceBf16(piece, root); });
  // Every rank but the root sends its contribution.
  Run(rank_ == root ? 0 : Bytes(tensor), [&] { SendReduce(tensor, root); });
}

// Reduce-scatter built from alltoall (rank r sums slice r of every rank's piece), then an
// allgather of the sums: each rank sends about 2(N-1)/N of the piece, as a ring all-reduce.
void GlooStagedCommunicator::AllReduceBf16(at::Tensor piece) {
  const int64_t slice = (piece.numel() + world_ - 1) / world_;
  at::Tensor send = at::zeros({world_ * slice}, piece.options());
  send.narrow(0, 0, piece.numel()).copy_(piece);
  at::Tensor received = at::empty_like(send);
  AllToAll(received, send);
  const at::Tensor sum = SumInRankOrder(received.view({world_, slice})).to(at::kBFloat16);
  std::vector<at::Tensor> gathered;  // every rank's sum, back into `send`
  for (int r = 0; r < world_; ++r) gathered.push_back(send.narrow(0, r * slice, slice));
  AllGather(sum, gathered);
  piece.copy_(send.narrow(0, 0, piece.numel()));
}

// Every rank's piece gathered at the root, summed there.
void GlooStagedCommunicator::ReduceBf16(at::Tensor piece, int root) {
  std::vector<at::Tensor> outputs;
  at::Tensor parts;
  if (rank_ == root) {
    parts = at::empty({world_, piece.numel()}, piece.options());
    for (int r = 0; r < world_; ++r) outputs.push_back(Bits(parts[r]));
  }
  Run(rank_ == root ? 0 : Bytes(piece), [&] { SendGather(outputs, Bits(piece), root); });
  if (rank_ == root) piece.copy_(SumInRankOrder(parts));
}

}  // namespace memsweep::dist
