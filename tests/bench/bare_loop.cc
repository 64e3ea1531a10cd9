#include "bare_loop.h"

#include <ATen/autocast_mode.h>
#include <c10/core/CPUAllocator.h>
#include <torch/types.h>  // clip_grad.h is not self-contained
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/utils.h>

#include <chrono>

#include "attention/eager/eager_attention.h"
#include "core/config/strategy_resolver.h"
#include "memsweep/batcher.h"
#include "core/memory/tracking_allocator.h"
#include "core/model/llama.h"
#include "core/train/lr_schedule.h"

namespace memsweep::bench {

BareLoopResult RunBareLoop(const config::RunConfig& cfg, bool bf16_autocast) {
  c10::SetCPUAllocator(c10::GetDefaultCPUAllocator(), 255);
  BareLoopResult result;
  const data::DataConfig data = config::EffectiveDataConfig(cfg);
  {
    torch::manual_seed(cfg.experiment.seed);
    model::LlamaModel model(cfg.model.llama);
    model->SetAttention(plugins::EagerCausalAttention);
    data::Batcher batcher(data, cfg.experiment.seed);
    const auto& o = cfg.optimizer;
    torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(o.lr)
                                                           .betas({o.beta1, o.beta2})
                                                           .eps(o.eps)
                                                           .weight_decay(o.weight_decay));
    const train::LrSchedule schedule{o.lr, o.lr_warmup_steps, cfg.experiment.steps,
                                     o.min_lr_ratio};
    for (int64_t step = 0; step < cfg.experiment.steps; ++step) {
      const auto start = std::chrono::steady_clock::now();
      for (auto& group : optimizer.param_groups()) group.options().set_lr(schedule.At(step));
      std::vector<data::Batch> batches;
      int64_t tokens = 0;
      for (int64_t i = 0; i < data.accumulation_steps; ++i) {
        batches.push_back(batcher.Next());
        tokens += batches.back().real_tokens;
      }
      double loss_sum = 0;
      for (const auto& batch : batches) {
        if (bf16_autocast) {
          at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
          at::autocast::set_autocast_enabled(at::kCPU, true);
        }
        at::Tensor loss = model::NextTokenLoss(model->forward(batch.input_ids, batch.position_ids),
                                               batch.targets, tokens);
        if (bf16_autocast) {
          at::autocast::set_autocast_enabled(at::kCPU, false);
          at::autocast::clear_cache();
        }
        loss.backward();
        loss_sum += loss.item<double>();
      }
      torch::nn::utils::clip_grad_norm_(model->parameters(), o.grad_clip);
      optimizer.step();
      optimizer.zero_grad();
      result.step_seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      result.losses.push_back(loss_sum);
    }
  }
  c10::SetCPUAllocator(&memory::TrackingAllocator::Instance(), 255);
  return result;
}

}  // namespace memsweep::bench
