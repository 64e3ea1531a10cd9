// Shared by the checkpointing plugins' tests: one forward+backward of a small model with a given
// BlockRunner, and bitwise comparison of gradients.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <functional>
#include <string>
#include <vector>

#include "attention/eager/eager_attention.h"
#include "core/model/llama.h"
#include "core/train/run_result.h"
#include "support/run_configs.h"

namespace memsweep::testing_support {

// Makes the runner for a model (every_k needs the model's blocks).
using RunnerFactory = std::function<model::BlockRunner(const model::LlamaModelImpl&)>;

inline RunnerFactory Plain() {
  return [](const model::LlamaModelImpl&) { return model::BlockRunner(model::RunBlockDirectly); };
}

struct OneStep {
  std::vector<at::Tensor> grads;  // of every parameter, in parameters() order
  at::Tensor loss;
  at::Tensor after;  // a random draw made after backward: the generator's state then
};

// Seeds, builds the model (`layers` decoder blocks of the tiny preset), runs forward and backward
// once on a fixed random batch. `around_forward` runs the forward (e.g. under autocast).
inline OneStep RunOneStep(const RunnerFactory& runner, int64_t layers = 2,
                          model::AttentionFn attention = plugins::EagerCausalAttention,
                          std::function<at::Tensor(const std::function<at::Tensor()>&)>
                              around_forward = {}) {
  torch::manual_seed(0);
  model::LlamaConfig cfg = *model::LlamaPreset("tiny");
  cfg.num_hidden_layers = layers;
  model::LlamaModel m(cfg);
  m->SetAttention(std::move(attention));
  m->SetBlockRunner(runner(*m));
  const int64_t b = 2, t = 24;
  const at::Tensor ids = at::randint(0, 259, {b, t}, at::kLong);
  const at::Tensor targets = at::randint(0, 259, {b, t}, at::kLong);
  const at::Tensor positions = at::arange(t, at::kLong).unsqueeze(0).expand({b, t}).contiguous();
  auto forward = [&] {
    return model::NextTokenLoss(m->forward(ids, positions), targets, static_cast<double>(b * t));
  };
  OneStep result;
  result.loss = around_forward ? around_forward(forward) : forward();
  result.loss.backward();
  for (const at::Tensor& p : m->parameters()) result.grads.push_back(p.grad().clone());
  result.after = at::rand({4});
  return result;
}

inline void ExpectBitwiseEqualGrads(const OneStep& expected, const OneStep& actual) {
  ASSERT_EQ(expected.grads.size(), actual.grads.size());
  EXPECT_TRUE(at::equal(expected.loss, actual.loss));
  for (size_t i = 0; i < expected.grads.size(); ++i) {
    ASSERT_TRUE(actual.grads[i].defined()) << "parameter " << i;
    EXPECT_TRUE(at::equal(expected.grads[i], actual.grads[i])) << "parameter " << i;
  }
}

// A tiny training run with the given checkpointing plugin (and further overrides).
inline train::RunResult TrainWith(const std::string& plugin, std::vector<std::string> more = {},
                                  int64_t steps = 4) {
  more.push_back("strategies.checkpointing.plugin=\"" + plugin + "\"");
  more.push_back("strategies.batching.padding=max_length");
  return Train(TinyRun(steps, more));
}

}  // namespace memsweep::testing_support
