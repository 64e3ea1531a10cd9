"""Peak memory of transformers' own training step, for tests/plugins/loss/full/hf_peak_test.cc.

For each model type memsweep reads (a small config with a real-sized vocabulary, so that the
logits weigh): transformers builds the model in fp32 on the CPU and trains three AdamW steps on
random tokens (labels = input ids), under torch.profiler with profile_memory=True from before the
model is built. The peak is the highest sum of live tensor bytes in the profiler's memory
timeline (torch.profiler._memory_profiler.MemoryProfile, the data behind
export_memory_timeline) — every parameter, gradient, optimizer state and activation.

Two training loops, as users write them, and the first with gradient checkpointing:
  trainer:      loss = model(input_ids=ids, labels=ids).loss; loss.backward()
                (transformers' Trainer: compute_loss keeps only the loss)
  outputs_kept: outputs = model(input_ids=ids, labels=ids); outputs.loss.backward()
                (the loop of Hugging Face's tutorials: `outputs` holds the logits through
                backward)
  trainer_checkpointed: the trainer loop after model.gradient_checkpointing_enable() with its
                defaults (what `gradient_checkpointing=True` in TrainingArguments does): every
                decoder layer recomputed in backward

  python3 make_references.py OUT_DIR
writes OUT_DIR/<case>/config.json and OUT_DIR/<case>/peaks.json.

  python3 make_references.py --config MODEL_DIR --layers L --rows B --tokens T OUT_DIR
measures one bundled model instead (its config.json, cut to L decoder blocks): the transformers
side of docs/loss.md's table.
"""
import argparse
import json
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile
from torch.profiler._memory_profiler import MemoryProfile
from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM,
                          Phi3Config, Phi3ForCausalLM, Qwen2Config, Qwen2ForCausalLM)

SHAPE = dict(vocab_size=16384, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
             max_position_embeddings=512, attn_implementation="eager")
ROWS, TOKENS, STEPS = 2, 128, 3


def cases():
    yield "llama", LlamaForCausalLM, LlamaConfig(**SHAPE, tie_word_embeddings=False)
    yield "qwen2", Qwen2ForCausalLM, Qwen2Config(**SHAPE, tie_word_embeddings=True)
    yield "mistral", MistralForCausalLM, MistralConfig(**SHAPE, tie_word_embeddings=False)
    yield "phi3", Phi3ForCausalLM, Phi3Config(**SHAPE, tie_word_embeddings=False, pad_token_id=0,
                                                 bos_token_id=1, eos_token_id=2)


def peak_bytes(model_class, config, loop):
    torch.manual_seed(0)
    ids = torch.randint(0, config.vocab_size, (ROWS, TOKENS))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as prof:
        model = model_class(config).to(torch.float32)  # a class, or AutoModel's from_config
        if loop == "trainer_checkpointed":
            model.gradient_checkpointing_enable()
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for _ in range(STEPS):
            if loop in ("trainer", "trainer_checkpointed"):
                loss = model(input_ids=ids, labels=ids).loss
                loss.backward()
            else:
                outputs = model(input_ids=ids, labels=ids)
                outputs.loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            loss = outputs = None
    live, peak = 0, 0
    for _, action, _, size in MemoryProfile(prof.profiler.kineto_results).timeline:
        name = str(action)
        if name.endswith("CREATE"):
            live += size
        elif name.endswith("DESTROY"):
            live -= size
        peak = max(peak, live)
    return peak


def main():
    global ROWS, TOKENS
    parser = argparse.ArgumentParser()
    parser.add_argument("--config")
    parser.add_argument("--layers", type=int)
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--tokens", type=int, default=TOKENS)
    parser.add_argument("out_dir")
    args = parser.parse_args()
    ROWS, TOKENS = args.rows, args.tokens
    out_dir = args.out_dir
    torch.set_num_threads(1)
    selected = list(cases())
    if args.config:
        from transformers import AutoConfig, AutoModelForCausalLM
        overrides = {}
        if args.layers:
            overrides["num_hidden_layers"] = args.layers
            overrides["layer_types"] = AutoConfig.from_pretrained(args.config).layer_types[:args.layers]
        config = AutoConfig.from_pretrained(args.config, **overrides)
        config._attn_implementation = "eager"
        selected = [("config", AutoModelForCausalLM.from_config, config)]
    for name, model_class, config in selected:
        case_dir = Path(out_dir) / name
        case_dir.mkdir(parents=True, exist_ok=True)
        config.save_pretrained(case_dir)
        peaks = {loop: peak_bytes(model_class, config, loop)
                 for loop in ("trainer", "outputs_kept", "trainer_checkpointed")}
        peaks.update(rows=ROWS, tokens=TOKENS, steps=STEPS,
                     logits_bytes=4 * ROWS * TOKENS * config.vocab_size)
        (case_dir / "peaks.json").write_text(json.dumps(peaks, indent=1) + "\n")
        print(name, peaks)


if __name__ == "__main__":
    main()
