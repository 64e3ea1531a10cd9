"""Peak memory of transformers' training step with torch.optim.AdamW, for
tests/plugins/optimizer/torch_adamw/hf_peak_test.cc.

A small Qwen2 (hidden 64, 2 decoder blocks, a vocabulary of 16,384 so that the head and its
optimizer state weigh), with an untied and with a tied head, built in fp32 on the CPU and
trained three steps on 2 x 128 random tokens (labels = input ids) in transformers' Trainer loop
(the loss alone kept through backward), with torch.optim.AdamW(model.parameters(), lr=1e-4) in
each implementation: foreach=False (what the CPU runs by default), foreach=True, fused=True —
and, per implementation, the same loop with forward and loss under
torch.autocast("cpu", dtype=torch.bfloat16).

Measured with torch.profiler (profile_memory=True) from before the model is built: the run's
peak is the highest sum of live tensor bytes in the memory timeline (MemoryProfile); the
optimizer step's peak is the highest within an optimizer.step() window (its
"Optimizer.step#AdamW.step" record), over the three steps.

  python3 make_references.py OUT_DIR
writes OUT_DIR/<case>/config.json and OUT_DIR/<case>/peaks.json.
"""
import contextlib
import json
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile
from torch.profiler._memory_profiler import MemoryProfile, _EventType
from transformers import Qwen2Config, Qwen2ForCausalLM

SHAPE = dict(vocab_size=16384, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
             max_position_embeddings=512, attn_implementation="eager")
ROWS, TOKENS, STEPS = 2, 128, 3
LR = 1e-4
IMPLEMENTATIONS = {"for-loop": dict(foreach=False), "foreach": dict(foreach=True),
                   "fused": dict(fused=True)}
PRECISIONS = ("fp32", "bf16-autocast")


def peaks(config, options, precision):
    torch.manual_seed(0)
    ids = torch.randint(0, config.vocab_size, (ROWS, TOKENS))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as prof:
        model = Qwen2ForCausalLM(config).to(torch.float32)
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=LR, **options)
        for _ in range(STEPS):
            autocast = (torch.autocast("cpu", dtype=torch.bfloat16)
                        if precision == "bf16-autocast" else contextlib.nullcontext())
            with autocast:
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            loss = None
    memory = MemoryProfile(prof.profiler.kineto_results)
    windows = [(e.start_time_ns, e.start_time_ns + e.duration_time_ns)
               for e in memory._op_tree.dfs()
               if e.typed[0] == _EventType.TorchOp and e.name.startswith("Optimizer.step#")]
    live, peak, step_peak = 0, 0, 0
    for t, action, _, size in memory.timeline:
        name = str(action)
        if name.endswith("CREATE"):
            live += size
        elif name.endswith("DESTROY"):
            live -= size
        peak = max(peak, live)
        if any(start <= t <= end for start, end in windows):
            step_peak = max(step_peak, live)
    assert len(windows) == STEPS, windows
    return {"peak": peak, "optimizer_step": step_peak}


def main():
    out_dir = Path(sys.argv[1])
    torch.set_num_threads(1)
    for name, tied in (("qwen2_untied", False), ("qwen2_tied", True)):
        config = Qwen2Config(**SHAPE, tie_word_embeddings=tied)
        case_dir = out_dir / name
        case_dir.mkdir(parents=True, exist_ok=True)
        config.save_pretrained(case_dir)
        figures = {precision: {impl: peaks(config, options, precision)
                               for impl, options in IMPLEMENTATIONS.items()}
                   for precision in PRECISIONS}
        figures.update(rows=ROWS, tokens=TOKENS, steps=STEPS, lr=LR)
        (case_dir / "peaks.json").write_text(json.dumps(figures, indent=1) + "\n")
        print(name, figures)


if __name__ == "__main__":
    main()
