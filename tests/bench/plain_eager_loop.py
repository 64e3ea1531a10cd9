#!/usr/bin/env python3
"""A plain PyTorch eager training loop, the reference memsweep's throughput is measured against.

Hugging Face transformers' LlamaForCausalLM (eager attention) with the shape of memsweep's
`small` preset (vocab 8192, hidden 512, MLP 1376, 8 layers, 8 heads, untied LM head), trained
the way a user's script does: torch.optim.AdamW with its defaults for CPU tensors, gradient
clipping at 1.0, fp32, rows of B x T token ids with no padding (memsweep's packed rows), loss
over every next token. Prints the median step time and tokens/s over the measured steps.
Needs the environment memsweep's set-up installs torch into, plus transformers (pinned below).

  plain_eager_loop.py [--batch 4] [--seq-len 512] [--steps 8] [--warmup 2] [--threads 2]
                      [--attn eager|sdpa] [--profile]   # per-op CPU time of one step (torch.profiler)
"""
import argparse
import statistics
import time

import torch
import transformers

PINNED_TRANSFORMERS = "5.23.0"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--attn", choices=["eager", "sdpa"], default="eager",
                        help="transformers' attn_implementation (sdpa: ATen's fused attention)")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if transformers.__version__ != PINNED_TRANSFORMERS:
        raise SystemExit(f"transformers {transformers.__version__}: this benchmark pins "
                         f"{PINNED_TRANSFORMERS} (pip install transformers=={PINNED_TRANSFORMERS})")
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    config = transformers.LlamaConfig(
        vocab_size=8192, hidden_size=512, intermediate_size=1376, num_hidden_layers=8,
        num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=4096,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
        attention_bias=False, mlp_bias=False, attn_implementation=args.attn)
    model = transformers.LlamaForCausalLM(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq_len))

    def step():
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    times = []
    for i in range(args.warmup + args.steps):
        start = time.perf_counter()
        step()
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
    median = statistics.median(times)
    tokens = args.batch * args.seq_len
    params = sum(p.numel() for p in model.parameters())
    print(f"plain_eager_loop torch {torch.__version__} transformers {transformers.__version__} "
          f"attn {args.attn} threads {torch.get_num_threads()} params {params} batch {args.batch}x{args.seq_len}: "
          f"step median {median * 1e3:.1f} ms, tokens/s {tokens / median:.1f}")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step()
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))


if __name__ == "__main__":
    main()
