"""Peak memory of transformers' training step with torch.optim.AdamW, for
tests/plugins/optimizer/torch_adamw/hf_peak_test.cc.

A small Qwen2 (hidden 64, 2 decoder blocks, a vocabulary of 16,384 so that the head and its
optimizer state weigh), with an untied and with a tied head, built in fp32 on the CPU and
trained three steps on 2 x 128 random tokens (labels = input ids) in transformers' Trainer loop
(the loss alone kept through backward), with torch.optim.AdamW in each implementation:
foreach=False (what the CPU runs by default), foreach=True (torch's default on CUDA),
fused=True — and, per implementation, the same loop with forward and loss under
torch.autocast("cpu", dtype=torch.bfloat16). Two parameter groupings:
  "single":  torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1);
  "trainer": the optimizer transformers' Trainer builds for optim="adamw_torch" (for-loop,
             foreach) or "adamw_torch_fused" — Trainer.create_optimizer's two groups, the names
             Trainer.get_decay_parameter_names gives with weight_decay=0.1, then the others
             (biases, norms) with 0.0; the class and arguments from
             Trainer.get_optimizer_cls_and_kwargs.

Measured with torch.profiler (profile_memory=True) from before the model is built: the run's
peak is the highest sum of live tensor bytes in the memory timeline (MemoryProfile); the
optimizer step's peak is the highest within an optimizer.step() window (its
"Optimizer.step#AdamW.step" record), over the three steps.

  python3 make_references.py OUT_DIR
writes OUT_DIR/<case>/config.json and OUT_DIR/<case>/peaks.json
(<grouping>.<precision>.<implementation>: peak, optimizer_step).
"""
import contextlib
import json
import sys
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile
from torch.profiler._memory_profiler import MemoryProfile, _EventType
from transformers import Qwen2Config, Qwen2ForCausalLM, Trainer, TrainingArguments

SHAPE = dict(vocab_size=16384, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
             max_position_embeddings=512, attn_implementation="eager")
ROWS, TOKENS, STEPS = 2, 128, 3
LR, WEIGHT_DECAY = 1e-4, 0.1
IMPLEMENTATIONS = {"for-loop": dict(foreach=False), "foreach": dict(foreach=True),
                   "fused": dict(fused=True)}
PRECISIONS = ("fp32", "bf16-autocast")
GROUPINGS = ("trainer", "single")


def trainer_optimizer(model, impl, work_dir):
    """The AdamW transformers' Trainer creates (Trainer.create_optimizer): its decay and no-decay
    groups, the class and arguments get_optimizer_cls_and_kwargs gives for the optim name."""
    optim = "adamw_torch_fused" if impl == "fused" else "adamw_torch"
    args = TrainingArguments(output_dir=work_dir, optim=optim, learning_rate=LR,
                             weight_decay=WEIGHT_DECAY, report_to=[])
    decay = Trainer.get_decay_parameter_names(None, model)
    # memsweep's "trainer" grouping takes the 2+-dim tensors: in this model, the same ones.
    assert all((n in decay) == (p.dim() >= 2) for n, p in model.named_parameters()), decay
    groups = [
        {"params": [p for n, p in model.named_parameters() if n in decay and p.requires_grad],
         "weight_decay": args.weight_decay},
        {"params": [p for n, p in model.named_parameters() if n not in decay and p.requires_grad],
         "weight_decay": 0.0},
    ]
    optimizer_cls, kwargs = Trainer.get_optimizer_cls_and_kwargs(args, model)
    if impl != "fused":  # adamw_torch leaves it to torch: foreach on CUDA, the for-loop on the CPU
        kwargs["foreach"] = impl == "foreach"
    return optimizer_cls(groups, **kwargs)


def make_optimizer(model, impl, grouping, work_dir):
    if grouping == "trainer":
        return trainer_optimizer(model, impl, work_dir)
    return torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY,
                             **IMPLEMENTATIONS[impl])


def peaks(config, impl, grouping, precision, work_dir):
    torch.manual_seed(0)
    ids = torch.randint(0, config.vocab_size, (ROWS, TOKENS))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as prof:
        model = Qwen2ForCausalLM(config).to(torch.float32)
        model.train()
        optimizer = make_optimizer(model, impl, grouping, work_dir)
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
    with tempfile.TemporaryDirectory() as work_dir:
        for name, tied in (("qwen2_untied", False), ("qwen2_tied", True)):
            config = Qwen2Config(**SHAPE, tie_word_embeddings=tied)
            case_dir = out_dir / name
            case_dir.mkdir(parents=True, exist_ok=True)
            config.save_pretrained(case_dir)
            figures = {grouping: {precision: {impl: peaks(config, impl, grouping, precision,
                                                          work_dir)
                                              for impl in IMPLEMENTATIONS}
                                  # bf16 autocast with the Trainer's grouping only (the suite's
                                  # time; the optimizer step is the same under both precisions)
                                  for precision in (PRECISIONS if grouping == "trainer"
                                                    else ("fp32",))}
                       # one group with the untied head only: where the order matters
                       for grouping in GROUPINGS if not (tied and grouping == "single")}
            figures.update(rows=ROWS, tokens=TOKENS, steps=STEPS, lr=LR,
                           weight_decay=WEIGHT_DECAY)
            (case_dir / "peaks.json").write_text(json.dumps(figures, indent=1) + "\n")
            print(name, figures)


if __name__ == "__main__":
    main()
