// memsweep_bench_loss: the loss slot's three computations on an LM head of a real size
// (docs/loss.md, docs/benchmarks.md): peak memory of the loss computation — from the final
// hidden states to their gradient and the head's — and its time, for loss/full, loss/chunked
// (8 chunks) and loss/fused (its default chunk in both orders — token chunks and vocabulary
// blocks —, a larger token chunk and, where it differs, Liger's), in fp32 and bf16.
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
// product the computations run, alone (where a fused order's time goes). In bf16, fused at its
// default chunk also runs with the head's gradient summed in bf16 (accumulation = "weight", Liger
// Kernel's own choice).
//
// Whole training steps over every bundled model shape (the presets and
// experiments/models/*/config.json), fp32 on the CPU:
//   build/release/memsweep_bench_loss --whole-step 1 [--rounds R] [--layers L] [--batch B]
//                                     [--seq-len T] [--max-gib G] [--shapes a,b] [--chunk n]
//                                     [--models DIR]
// For each shape: the model cut to L decoder blocks (default 2), B x T tokens (default 2 x 256),
// one step (forward, loss, backward, gradient clipping, AdamW) with loss/full's computation and
// one with loss/fused at its default chunk (--chunk n: that chunk instead), on the same model and
// optimizer, alternating which goes first each round after one untimed step of each. It prints
// each one's median tokens/s, their ratio (fused / full) and the range of the per-round ratios
// (each round's two steps run back to back: the machine is shared and its load moves), the default
// chunk against Liger's, and the bytes the fused loss held beyond the gradients as a share of the
// fp32 logits (goal ≤ 25 %). A shape whose model, AdamW state and full's logits would pass G GiB
// (default 8) loses blocks, down to none; one that passes G even then is timed as the loss alone
// (its ratio bounds the whole step's from below: the rest of the step is the same for both).
#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/autograd.h>

#include <torch/types.h>  // clip_grad.h is not self-contained
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <filesystem>
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
#include "core/model/hf_config.h"
#include "core/model/llama.h"
#include "core/model/llama_config.h"
#include "memsweep/attention.h"
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


// --- Whole training steps over the bundled model shapes (--whole-step 1) ---

struct ShapeSpec {
  std::string name;
  model::LlamaConfig config;
};

// The presets (core/model/llama_config.h) and every experiments/models/*/config.json.
std::vector<ShapeSpec> BundledShapes(const std::string& models_dir) {
  std::vector<ShapeSpec> shapes;
  for (const std::string& name : model::LlamaPresetNames()) {
    shapes.push_back({"preset " + name, model::LlamaPreset(name).value()});
  }
  std::vector<std::filesystem::path> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(models_dir)) {
    if (std::filesystem::exists(entry.path() / "config.json")) dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    shapes.push_back({dir.filename().string(), model::ReadHuggingFaceConfig(dir.string())});
  }
  return shapes;
}

// Causal attention with ATen's fused kernel: the same for both losses, and no plugin to link.
at::Tensor CausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const model::AttentionInputs&) {
  const int64_t heads = q.size(1);
  return at::scaled_dot_product_attention(q, model::RepeatKvHeads(k, heads),
                                          model::RepeatKvHeads(v, heads), {}, 0.0,
                                          /*is_causal=*/true);
}

// Bytes a shape needs with `layers` blocks: the model, its gradients and AdamW's two moments in
// fp32, and full's loss at its peak (the fp32 log-softmax and two gradients of its size).
double StepBytes(model::LlamaConfig config, int64_t layers, int64_t tokens) {
  config.num_hidden_layers = layers;
  return 16.0 * static_cast<double>(config.ParameterCount()) +
         12.0 * static_cast<double>(tokens) * static_cast<double>(config.vocab_size);
}

using Loss = std::function<at::Tensor(const model::LossInputs&)>;

at::Tensor FusedAt(const model::LossInputs& in, int64_t chunk) {
  plugins::loss::FusedLossOptions o;
  o.chunk_tokens = chunk;
  return plugins::loss::FusedLinearCrossEntropy(in, o);
}

struct Stepper {
  model::LlamaModel model{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer;
  at::Tensor ids, positions, targets;
  double normalizer = 1;
};

// One training step; `transient`, if given: the bytes the loss call held at its peak beyond its
// inputs and the two gradients it returns (fused computes everything within that call).
double TimedStep(Stepper& s, const Loss& loss, memory::DeviceMeter& meter, int64_t* transient) {
  const auto start = Clock::now();
  const at::Tensor hidden = s.model->HiddenStates(s.ids, s.positions);
  const model::LinearLayer& head = s.model->LmHead();
  meter.ResetPeak();
  const int64_t before = meter.AllocatedBytes();
  const at::Tensor l = loss(model::LossInputs{hidden, &head, s.targets, s.normalizer});
  if (transient != nullptr) {
    *transient = meter.PeakAllocatedBytes() - before - static_cast<int64_t>(hidden.nbytes()) -
                 static_cast<int64_t>(head.weight.nbytes());
  }
  l.backward();
  torch::nn::utils::clip_grad_norm_(s.model->parameters(), 1.0);
  s.optimizer->step();
  s.optimizer->zero_grad();
  (void)l.item<double>();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct PairResult {
  std::vector<double> full_s, fused_s;
  std::vector<double> ratios, cpu_ratios;  // each round's full / fused: wall time, CPU time
  int64_t transient = 0;
};

// The CPU time of this process, all threads (descheduled time does not count).
double ProcessCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// `rounds` interleaved pairs after one untimed call of each; `run(fused, transient)` times one.
PairResult Interleave(int rounds, const std::function<double(bool, int64_t*)>& run) {
  PairResult r;
  run(false, nullptr);
  run(true, nullptr);
  for (int round = 0; round < rounds; ++round) {
    double t[2] = {0, 0}, cpu[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const bool fused = (k + round) % 2 == 1;
      const double cpu_start = ProcessCpuSeconds();
      t[fused] = run(fused, fused ? &r.transient : nullptr);
      cpu[fused] = ProcessCpuSeconds() - cpu_start;
    }
    r.full_s.push_back(t[0]);
    r.fused_s.push_back(t[1]);
    r.ratios.push_back(t[0] / t[1]);
    r.cpu_ratios.push_back(cpu[0] / cpu[1]);
  }
  return r;
}

int WholeSteps(int argc, char** argv, memory::DeviceMeter& meter) {
  const int rounds = ArgInt(argc, argv, "--rounds", 3);
  const int64_t layers = ArgInt(argc, argv, "--layers", 2);
  const int64_t batch = ArgInt(argc, argv, "--batch", 2);
  const int64_t seq_len = ArgInt(argc, argv, "--seq-len", 256);
  const double max_bytes = ArgInt(argc, argv, "--max-gib", 8) * 1073741824.0;
  const int64_t chunk_arg = ArgInt(argc, argv, "--chunk", 0);
  const std::string wanted = "," + ArgString(argc, argv, "--shapes", "") + ",";
  const std::string models_dir = ArgString(argc, argv, "--models", "experiments/models");
  const int64_t tokens = batch * seq_len;
  std::printf("whole steps, fp32 on the CPU: %lld x %lld tokens, %lld blocks (fewer where the "
              "step would pass %.0f GiB), %d rounds, fused at %s\n\n",
              static_cast<long long>(batch), static_cast<long long>(seq_len),
              static_cast<long long>(layers), max_bytes / 1073741824.0, rounds,
              chunk_arg > 0 ? ("chunk_tokens = " + std::to_string(chunk_arg)).c_str()
                            : "its default chunk");
  std::printf("  %-20s %6s %7s %5s %6s %5s %5s %10s %11s %6s %11s %9s %9s\n", "shape", "hidden",
              "vocab", "tied", "blocks", "Liger", "chunk", "full tok/s", "fused tok/s", "ratio",
              "range", "cpu ratio", "transient");
  for (const ShapeSpec& shape : BundledShapes(models_dir)) {
    if (wanted != ",," && wanted.find("," + shape.name + ",") == std::string::npos) continue;
    const model::LlamaConfig& c = shape.config;
    const int64_t chunk = chunk_arg > 0 ? chunk_arg
                                        : plugins::loss::DefaultChunkTokens(
                                              tokens, c.vocab_size, c.hidden_size,
                                              c10::DeviceType::CPU, at::kFloat);
    const Loss fused = [chunk](const model::LossInputs& in) { return FusedAt(in, chunk); };
    int64_t blocks = std::min<int64_t>(layers, c.num_hidden_layers);
    while (blocks > 0 && StepBytes(c, blocks, tokens) > max_bytes) --blocks;
    const bool whole = StepBytes(c, blocks, tokens) <= max_bytes;
    PairResult r;
    if (whole) {
      model::LlamaConfig cut = c;
      cut.num_hidden_layers = blocks;
      at::manual_seed(0);
      Stepper s;
      s.model = model::LlamaModel(cut);
      s.model->SetAttention(CausalAttention);
      s.optimizer = std::make_unique<torch::optim::AdamW>(s.model->parameters(),
                                                          torch::optim::AdamWOptions(1e-5));
      s.ids = at::randint(0, c.vocab_size, {batch, seq_len}, at::kLong);
      s.positions = at::arange(seq_len, at::kLong).unsqueeze(0).expand({batch, seq_len}).contiguous();
      s.targets = at::randint(0, c.vocab_size, {batch, seq_len}, at::kLong);
      s.normalizer = static_cast<double>(tokens);
      r = Interleave(rounds, [&](bool f, int64_t* transient) {
        return TimedStep(s, f ? fused : Loss(Full), meter, transient);
      });
    } else {
      // The loss alone, from the hidden states to their gradient and the head's.
      at::manual_seed(0);
      const at::Tensor hidden = at::randn({batch, seq_len, c.hidden_size});
      const at::Tensor weight = (at::randn({c.vocab_size, c.hidden_size}) * 0.02).requires_grad_(true);
      const at::Tensor targets = at::randint(0, c.vocab_size, {batch, seq_len}, at::kLong);
      r = Interleave(rounds, [&](bool f, int64_t* transient) {
        const Measure m = Once(f ? fused : Loss(Full), hidden, weight, targets, meter);
        if (transient != nullptr) {
          *transient = m.peak_bytes - static_cast<int64_t>(hidden.nbytes() + weight.nbytes());
        }
        return m.seconds;
      });
    }
    const double full_s = train::Percentile(r.full_s, 0.5), fused_s = train::Percentile(r.fused_s, 0.5);
    const auto [lo, hi] = std::minmax_element(r.ratios.begin(), r.ratios.end());
    char range[32];
    std::snprintf(range, sizeof range, "%.2f-%.2f", *lo, *hi);
    const double logits = 4.0 * static_cast<double>(tokens) * static_cast<double>(c.vocab_size);
    std::printf("  %-20s %6lld %7lld %5s %6s %5lld %5lld %10.1f %11.1f %5.2fx %11s %8.2fx %8.1f%%\n",
                shape.name.c_str(), static_cast<long long>(c.hidden_size),
                static_cast<long long>(c.vocab_size), c.tie_word_embeddings ? "yes" : "no",
                whole ? std::to_string(blocks).c_str() : "loss",
                static_cast<long long>(plugins::loss::LigerChunkTokens(tokens, c.vocab_size, c.hidden_size)),
                static_cast<long long>(chunk), static_cast<double>(tokens) / full_s,
                static_cast<double>(tokens) / fused_s, train::Percentile(r.ratios, 0.5), range,
                train::Percentile(r.cpu_ratios, 0.5), 100.0 * static_cast<double>(r.transient) / logits);
  }
  std::printf("\n(blocks \"loss\": the loss alone was timed — the model would pass --max-gib; "
              "tok/s: median over the rounds; ratio: the median of the rounds' full / fused step "
              "times, range their smallest and largest, cpu ratio the same in CPU time (this "
              "process's threads, time descheduled by other processes left out); \"transient\": "
              "the fused loss's peak beyond its inputs and the gradients it returns, as a share of "
              "the fp32 logits; goals >= 0.9x at hidden >= 256, <= 25%%)\nload average at end: "
              "%s\n",
              LoadAverage().c_str());
  return 0;
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
  if (ArgInt(argc, argv, "--whole-step", 0) != 0) {
    std::printf("memsweep_bench_loss --whole-step  threads: %d  fp32 GEMM: %s\nload average at "
                "start: %s\n",
                threads, env::Fp32GemmName(env::ActiveFp32Gemm()), LoadAverage().c_str());
    return WholeSteps(argc, argv, *meter);
  }
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
    // The default chunk (chunk_tokens = 0) for this device and dtype: Liger's on CUDA.
    const int64_t chunk = plugins::loss::DefaultChunkTokens(tokens, vocab, hidden_size,
                                                            device.type(), dtype);
    const std::string blocks = std::to_string(
        (vocab + plugins::loss::VocabBlockRows(tokens, vocab, chunk) - 1) /
        plugins::loss::VocabBlockRows(tokens, vocab, chunk));
    std::vector<std::pair<std::string, std::function<at::Tensor(const model::LossInputs&)>>>
        variants = {{"full", Full},
                    {"chunked (8)", [](const model::LossInputs& in) { return Chunked(in, 8); }},
                    {"fused (default " + std::to_string(chunk) + ")", fused(0, true, FusedOrder::kTokens)},
                    {"fused (" + blocks + " vocab blocks)", fused(0, true, FusedOrder::kVocab)},
                    {"fused (" + std::to_string(large) + " tokens)", fused(large, true, FusedOrder::kTokens)}};
    if (chunk != liger) {
      variants.emplace_back("fused (Liger " + std::to_string(liger) + ")",
                            fused(liger, true, FusedOrder::kTokens));
    }
    if (dtype != at::kFloat) {
      variants.emplace_back("fused (" + std::to_string(chunk) + ", bf16 sum)",
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
      TimeGemms(device, dtype, tokens, hidden_size, vocab, chunk,
                plugins::loss::VocabBlockRows(tokens, vocab, chunk));
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
