"""torch.optim.AdamW's own steps, for tests/plugins/optimizer/torch_adamw/torch_reference_test.cc.

Tensors of varied shapes and two dtypes (fp32, and bf16 as a second (device, dtype) group for
foreach and fused), one whose gradient first appears at the third step and one that never gets a
gradient, start from seeded values; six steps apply seeded gradients with a learning rate that
changes every step (as a schedule does). Each implementation (foreach=False, foreach=True,
fused=True) runs with two parameter groupings: "single", AdamW(params) (weight decay on every
tensor); "trainer", two groups built as transformers' Trainer.create_optimizer builds them —
the tensors of 2+ dims with weight_decay, then the 1-D ones (the biases and norms of a model)
with 0.0, each in the tensors' order. The maker saves the tensors, exp_avg, exp_avg_sq and step
after the last step, and what each optimizer.step() allocated above what it found, at its
highest: the peak of the live bytes in torch.profiler's memory timeline (MemoryProfile,
profile_memory=True) within the step's window, less the live bytes at its start.

  python3 make_references.py OUT_DIR
writes OUT_DIR/inputs.safetensors (p<i>, g<k>_<i>), OUT_DIR/results.safetensors
(<groups>.<impl>.param<i>, .exp_avg<i>, .exp_avg_sq<i>, .step<i>) and OUT_DIR/steps.json.
"""
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch.profiler import ProfilerActivity, profile
from torch.profiler._memory_profiler import MemoryProfile, _EventType

SHAPES = [((64, 48), torch.float32), ((1000,), torch.float32), ((7, 13, 5), torch.float32),
          ((256, 160), torch.float32), ((33,), torch.float32), ((40, 24), torch.bfloat16),
          ((3, 4, 5, 6), torch.float32), ((129,), torch.bfloat16), ((17, 9), torch.float32),
          ((10, 10), torch.float32)]
LATE, FROZEN = 8, 9  # gradient from the third step on; never a gradient
STEPS = 6
LRS = [2e-3, 4e-3, 6e-3, 5e-3, 3e-3, 1e-3]
HYPER = dict(betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
IMPLEMENTATIONS = {"for-loop": dict(foreach=False), "foreach": dict(foreach=True),
                   "fused": dict(fused=True)}
GROUPINGS = ("single", "trainer")


def has_grad(i, k):
    return i != FROZEN and (i != LATE or k >= 2)


def inputs():
    gen = torch.Generator().manual_seed(11)
    tensors = {}
    for i, (shape, dtype) in enumerate(SHAPES):
        tensors[f"p{i}"] = torch.randn(shape, generator=gen).to(dtype)
        for k in range(STEPS):
            if has_grad(i, k):
                tensors[f"g{k}_{i}"] = (0.1 * torch.randn(shape, generator=gen)).to(dtype)
    return tensors


def step_rises(prof):
    """Per optimizer.step(): the highest live bytes within it less those at its start."""
    memory = MemoryProfile(prof.profiler.kineto_results)
    windows = sorted((e.start_time_ns, e.start_time_ns + e.duration_time_ns)
                     for e in memory._op_tree.dfs()
                     if e.typed[0] == _EventType.TorchOp and e.name.startswith("Optimizer.step#"))
    timeline = [(t, str(action), size) for t, action, _, size in memory.timeline if t >= 0]
    rises = []
    for start, end in windows:
        live = sum(s if a.endswith("CREATE") else -s for t, a, s in timeline
                   if t < start and (a.endswith("CREATE") or a.endswith("DESTROY")))
        at_start, highest = live, live
        for t, a, s in timeline:
            if start <= t <= end:
                if a.endswith("CREATE"):
                    live += s
                elif a.endswith("DESTROY"):
                    live -= s
                highest = max(highest, live)
        rises.append(highest - at_start)
    return rises


def param_groups(params, grouping):
    """AdamW's params argument: the tensors, or the Trainer's decay and no-decay groups."""
    if grouping == "single":
        return params
    return [{"params": [p for p in params if p.dim() >= 2], "weight_decay": HYPER["weight_decay"]},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]


def run(data, options, grouping):
    params = [torch.nn.Parameter(data[f"p{i}"].clone()) for i in range(len(SHAPES))]
    optimizer = torch.optim.AdamW(param_groups(params, grouping), lr=LRS[0], **HYPER, **options)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                 record_shapes=True) as prof:
        for k in range(STEPS):
            for i, p in enumerate(params):
                p.grad = data[f"g{k}_{i}"].clone() if has_grad(i, k) else None
            for group in optimizer.param_groups:
                group["lr"] = LRS[k]
            optimizer.step()
    return params, optimizer, step_rises(prof)


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    data = inputs()
    save_file(data, str(out / "inputs.safetensors"))
    results, rises = {}, {}
    for grouping in GROUPINGS:
        rises[grouping] = {}
        for impl, options in IMPLEMENTATIONS.items():
            name = f"{grouping}.{impl}"
            params, optimizer, rises[grouping][impl] = run(data, options, grouping)
            for i, p in enumerate(params):
                results[f"{name}.param{i}"] = p.detach().clone()
                state = optimizer.state.get(p)
                if state:
                    for key in ("exp_avg", "exp_avg_sq", "step"):
                        results[f"{name}.{key}{i}"] = state[key].clone()
            print(name, "step peaks above the bytes held:", rises[grouping][impl])
    save_file(results, str(out / "results.safetensors"))
    steps = dict(steps=STEPS, lrs=LRS, beta1=HYPER["betas"][0], beta2=HYPER["betas"][1],
                 eps=HYPER["eps"], weight_decay=HYPER["weight_decay"], tensors=len(SHAPES),
                 threads=torch.get_num_threads(), step_peak_rises=rises)
    (out / "steps.json").write_text(json.dumps(steps, indent=1) + "\n")


if __name__ == "__main__":
    main()
