// memsweep_bench_loss: the loss slot's three computations on an LM head of a real size
// (docs/loss.md, docs/benchmarks.md): peak memory of the loss computation — from the final
// hidden states to their gradient and the head's — and its time, for loss/full, loss/chunked
// (8 chunks) and loss/fused (Liger's chunk size in both orders — token chunks and vocabulary
// blocks — and a larger token chunk), in fp32 and bf16.
//
// Goals (issue: the loss slot): fused adds ≤ 10% of the full fp32 logits' bytes to the peak
// beyond the gradients every computation must produce (the hidden states' and the head's), and
// runs at ≥ 0.9x the speed of full. Peaks are measured by memsweep's tracking allocator, relative
// to the inputs (hidden states, weight, targets); variants are interleaved within each round and
// the median time over rounds is printed, with the load average before and after.
//
//   build/release/memsweep_bench_loss [--rounds R] [--tokens N] [--hidden H] [--vocab V]
//                                     [--dtypes 1|2|3] [--device cpu|cuda] [--gemms 1]
// Defaults: Llama-3.2-1B's head (hidden 2048, vocab 128,256) over 1 x 4096 tokens; --dtypes 1
// runs fp32 only, 2 bf16 only, 3 (default) both. --device cuda runs on the first GPU: peaks from
// the CUDA caching allocator's allocated bytes, times after a device synchronisation, and one
// untimed warm-up round (cuBLAS handles, workspaces, kernel loading). --gemms 1 also times each
// product the computations run, alone (where a fused order's time goes). In bf16, fused at Liger's chunk also runs with
// the head's gradient summed in bf16 (accumulation = "weight", Liger Kernel's own choice).
#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/autograd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench_args.h"
#include "core/env/cpu_gemm.h"
#include "core/env/threads.h"
#include "core/memory/device_meter.h"
#include "core/memory/tracking_allocator.h"
#include "core/train/summary.h"
#include "loss/common/token_loss.h"
#include "loss/fused/fused_linear_cross_entropy.h"
#include "memsweep/loss.h"

namespace {

using namespace memsweep;
using bench::ArgInt;
using bench::ArgString;
using bench::LoadAverage;
using bench::MiB;
using Clock = std::chrono::steady_clock;

// loss/full's and loss/chunked's computations, on the plugins' shared code (the plugins wrap
// exactly these in their LossFn).
at::Tensor Full(const model::LossInputs& in) {
  const at::Tensor logits = model::ApplyLinear(*in.head, in.hidden);
  return plugins::loss::SummedCrossEntropy(logits.reshape({-1, logits.size(-1)}),
                                           in.targets.reshape({-1}), /*upcast=*/true) /
         in.normalizer;
}

at::Tensor Chunked(const model::LossInputs& in, int64_t chunks) {
  const at::Tensor hidden = in.hidden.reshape({-1, in.hidden.size(-1)});
  const at::Tensor targets = in.targets.reshape({-1});
  const int64_t n = hidden.size(0);
  at::Tensor summed;
  for (const plugins::loss::RowRange& r : plugins::loss::ChunkRows(n, (n + chunks - 1) / chunks)) {
    const at::Tensor part = plugins::loss::SummedCrossEntropy(
        model::ApplyLinear(*in.head, hidden.slice(0, r.begin, r.end)),
        targets.slice(0, r.begin, r.end), /*upcast=*/true);
    summed = summed.defined() ? summed + part : part;
  }
  return summed / in.normalizer;
}

struct Measure {
  double seconds = 0;
  int64_t peak_bytes = 0;
  double loss = 0;
  at::Tensor grad_hidden, grad_weight;  // fp32 copies, taken after the peak is read
};

// max |x − reference| / max |reference|, in fp32.
double Deviation(const at::Tensor& x, const at::Tensor& reference) {
  return (x - reference).abs().max().item<double>() / reference.abs().max().item<double>();
}

void Synchronize(const c10::Device& device) {
  if (device.is_cuda()) c10::impl::getDeviceGuardImpl(device.type())->synchronizeDevice(device.index());
}

Measure Once(const std::function<at::Tensor(const model::LossInputs&)>& loss,
             const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
             memory::DeviceMeter& meter) {
  model::LinearLayer head;
  head.weight = weight;
  const at::Tensor h = hidden.detach().requires_grad_(true);
  weight.mutable_grad() = at::Tensor();
  Synchronize(hidden.device());
  meter.ResetPeak();
  const int64_t before = meter.AllocatedBytes();
  const auto start = Clock::now();
  double value = 0;
  {
    const at::Tensor l = loss(model::LossInputs{h, &head, targets, static_cast<double>(targets.numel())});
    l.backward();
    Synchronize(hidden.device());
    value = l.item<double>();
  }
  Measure m;
  m.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  m.peak_bytes = meter.PeakAllocatedBytes() - before;
  m.loss = value;
  m.grad_hidden = h.grad().to(at::kFloat);
  m.grad_weight = weight.grad().to(at::kFloat);
  return m;
}

// --gemms 1: the products each computation runs, timed alone (the mean of 5 calls after 2
// untimed ones): per call and over one step, for full, a token chunk and a vocabulary block.
void TimeGemms(const c10::Device& device, c10::ScalarType dtype, int64_t tokens, int64_t hidden,
               int64_t vocab, int64_t chunk, int64_t block) {
  const auto opts = at::TensorOptions().device(device).dtype(dtype);
  struct Shape {
    std::string name;
    int64_t m, k, n, count;
    bool accumulate;  // into an fp32 output
  };
  const int64_t chunks = (tokens + chunk - 1) / chunk, blocks = (vocab + block - 1) / block;
  const std::vector<Shape> shapes = {
      {"full  logits  h.W^T", tokens, hidden, vocab, 1, false},
      {"full  dh      g.W", tokens, vocab, hidden, 1, false},
      {"full  dW      g^T.h", vocab, tokens, hidden, 1, false},
      {"chunk logits  h.W^T", chunk, hidden, vocab, chunks, false},
      {"chunk dh      g.W", chunk, vocab, hidden, chunks, false},
      {"chunk dW +=   g^T.h (fp32 sum)", vocab, chunk, hidden, chunks, true},
      {"block logits  h.Wb^T (twice)", tokens, hidden, block, 2 * blocks, false},
      {"block dWb     g^T.h", block, tokens, hidden, blocks, false},
      {"block dh +=   g.Wb (fp32 sum)", tokens, block, hidden, blocks, true},
  };
  std::printf("\n  %-32s %22s %10s %10s %12s\n", "product", "m x k x n", "ms/call", "TFLOP/s",
              "ms per step");
  for (const Shape& sh : shapes) {
    const at::Tensor a = at::randn({sh.m, sh.k}, opts), b = at::randn({sh.k, sh.n}, opts);
    at::Tensor c = at::zeros({sh.m, sh.n}, opts.dtype(sh.accumulate ? at::kFloat : dtype));
    const auto call = [&] {
      if (!sh.accumulate) {
        at::mm_out(c, a, b);
      } else if (dtype == at::kFloat || !device.is_cuda()) {
        c.addmm_(a.to(at::kFloat), b.to(at::kFloat));
      } else {
        at::addmm_out(c, c, a, b, at::kFloat);
      }
    };
    call();
    call();
    Synchronize(device);
    const auto start = Clock::now();
    for (int i = 0; i < 5; ++i) call();
    Synchronize(device);
    const double per = std::chrono::duration<double>(Clock::now() - start).count() / 5;
    const double flops = 2.0 * static_cast<double>(sh.m) * static_cast<double>(sh.k) * static_cast<double>(sh.n);
    std::printf("  %-32s %6lld x %6lld x %6lld %10.3f %10.1f %12.2f\n", sh.name.c_str(),
                static_cast<long long>(sh.m), static_cast<long long>(sh.k), static_cast<long long>(sh.n),
                per * 1e3, flops / per / 1e12, per * 1e3 * static_cast<double>(sh.count));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  memory::TrackingAllocator::Install();
  const int threads = env::SetThreads(0);
  const int rounds = ArgInt(argc, argv, "--rounds", 3);
  const int64_t tokens = ArgInt(argc, argv, "--tokens", 4096);
  const int64_t hidden_size = ArgInt(argc, argv, "--hidden", 2048);
  const int64_t vocab = ArgInt(argc, argv, "--vocab", 128256);
  const int dtypes = ArgInt(argc, argv, "--dtypes", 3);
  const bool gemms = ArgInt(argc, argv, "--gemms", 0) != 0;
  const std::string device_name = ArgString(argc, argv, "--device", "cpu");
  if (device_name != "cpu" && device_name != "cuda") {
    std::fprintf(stderr, "memsweep_bench_loss: --device is cpu or cuda, not '%s'\n", device_name.c_str());
    return 2;
  }
  const c10::Device device = device_name == "cuda" ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  if (device.is_cuda() && !at::hasCUDA()) {
    std::fprintf(stderr, "memsweep_bench_loss: --device cuda, but this build or machine has no CUDA GPU\n");
    return 2;
  }
  const std::unique_ptr<memory::DeviceMeter> meter = memory::MakeDeviceMeter(device);
  env::UseFp32Gemm(env::ChooseFp32Gemm(env::Fp32GemmSetting::kAuto));
  env::UseBf16Gemm(env::ChooseBf16Gemm(env::Bf16GemmSetting::kAuto));
  std::printf("memsweep_bench_loss  device: %s  threads: %d  %d rounds  %lld tokens, hidden %lld, "
              "vocab %lld\nload average at start: %s\n",
              device.str().c_str(), threads, rounds, static_cast<long long>(tokens), static_cast<long long>(hidden_size),
              static_cast<long long>(vocab), LoadAverage().c_str());
  const double logits_fp32 = 4.0 * static_cast<double>(tokens) * static_cast<double>(vocab);
  const int64_t liger = plugins::loss::LigerChunkTokens(tokens, vocab, hidden_size);
  const int64_t large = std::min<int64_t>(tokens, 1024);
  for (c10::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    if ((dtypes & (dtype == at::kFloat ? 1 : 2)) == 0) continue;
    at::manual_seed(0);
    const at::Tensor hidden = at::randn({1, tokens, hidden_size}).to(device, dtype);
    const at::Tensor weight =
        (at::randn({vocab, hidden_size}) * 0.02).to(device, dtype).requires_grad_(true);
    const at::Tensor targets = at::randint(0, vocab, {1, tokens}, at::kLong).to(device);
    // What every computation must produce: the hidden states' gradient and the head's.
    const double needed = static_cast<double>(hidden.nbytes() + weight.nbytes());
    using plugins::loss::FusedOrder;
    const auto fused = [](int64_t chunk, bool fp32_accumulation, FusedOrder order) {
      return [chunk, fp32_accumulation, order](const model::LossInputs& in) {
        plugins::loss::FusedLossOptions o;
        o.chunk_tokens = chunk;
        o.fp32_accumulation = fp32_accumulation;
        o.order = order;
        return plugins::loss::FusedLinearCrossEntropy(in, o);
      };
    };
    // What order = "auto" takes here (the head is trainable and plain).
    const FusedOrder picked =
        plugins::loss::PickOrder(plugins::loss::FusedLossOptions{}, true, false, dtype);
    const std::string blocks = std::to_string(
        (vocab + plugins::loss::VocabBlockRows(tokens, vocab, liger) - 1) /
        plugins::loss::VocabBlockRows(tokens, vocab, liger));
    std::vector<std::pair<std::string, std::function<at::Tensor(const model::LossInputs&)>>>
        variants = {{"full", Full},
                    {"chunked (8)", [](const model::LossInputs& in) { return Chunked(in, 8); }},
                    {"fused (" + std::to_string(liger) + " tokens)", fused(0, true, FusedOrder::kTokens)},
                    {"fused (" + blocks + " vocab blocks)", fused(0, true, FusedOrder::kVocab)},
                    {"fused (" + std::to_string(large) + " tokens)", fused(large, true, FusedOrder::kTokens)}};
    if (dtype != at::kFloat) {
      variants.emplace_back("fused (" + std::to_string(liger) + ", bf16 sum)",
                            fused(0, false, FusedOrder::kTokens));
    }
    std::printf("\n%s: order = \"auto\" takes %s\n", dtype == at::kFloat ? "fp32" : "bf16",
                picked == FusedOrder::kVocab ? "the vocabulary blocks" : "the token chunks");
    std::map<std::string, std::vector<double>> seconds;
    std::map<std::string, int64_t> peaks;
    std::map<std::string, Measure> last;  // each variant's last run, for its deviation from full
    const int warmup = device.is_cuda() ? 1 : 0;
    for (int round = -warmup; round < rounds; ++round) {
      for (size_t k = 0; k < variants.size(); ++k) {
        const auto& [name, fn] = variants[(k + variants.size() + round) % variants.size()];
        const Measure m = Once(fn, hidden, weight, targets, *meter);
        if (round < 0) continue;
        seconds[name].push_back(m.seconds);
        last[name] = m;
        peaks[name] = m.peak_bytes;
      }
    }
    if (gemms) {
      TimeGemms(device, dtype, tokens, hidden_size, vocab, liger,
                plugins::loss::VocabBlockRows(tokens, vocab, liger));
    }
    const double full_s = train::Percentile(seconds["full"], 0.5);
    std::printf("\n%s (fp32 logits %.1f MiB; gradients every computation produces %.1f MiB)\n",
                dtype == at::kFloat ? "fp32" : "bf16", logits_fp32 / 1048576.0, needed / 1048576.0);
    std::printf("  %-22s %12s %14s %10s %12s %10s %10s %10s\n", "loss", "peak MiB", "beyond grads",
                "median s", "speed/full", "loss dev", "dh dev", "dW dev");
    const Measure& ref = last["full"];
    for (const auto& [name, fn] : variants) {
      const double s = train::Percentile(seconds[name], 0.5);
      const double beyond = static_cast<double>(peaks[name]) - needed;
      const Measure& m = last[name];
      std::printf("  %-22s %12.1f %13.1f%% %10.3f %11.2fx %10.1e %10.1e %10.1e\n", name.c_str(),
                  MiB(peaks[name]), 100.0 * beyond / logits_fp32, s, full_s / s,
                  std::abs(m.loss - ref.loss) / std::abs(ref.loss),
                  Deviation(m.grad_hidden, ref.grad_hidden), Deviation(m.grad_weight, ref.grad_weight));
    }
  }
  std::printf("\n(\"beyond grads\": the peak less the gradients, as a share of the fp32 logits; "
              "goal for fused <= 10%%, speed >= 0.9x. \"dev\": relative to full's, the loss's "
              "|difference| / |full's|, each gradient's max |difference| / max |full's|)\n"
              "load average at end: %s\n",
              LoadAverage().c_str());
  return 0;
}
