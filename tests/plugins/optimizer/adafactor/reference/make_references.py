"""transformers' Adafactor (transformers.optimization.Adafactor) as references for
tests/plugins/optimizer/adafactor/adafactor_reference_test.cc.

  python3 make_references.py --part steps OUT_DIR
For each case (the class's defaults; the Trainer's settings, optim="adafactor"; beta1 with
weight decay, each way; warmup_init; bf16 tensors) Adafactor updates tensors of varied shapes —
1-D (one of them zeros, as biases start, so that RMS < eps2), 2-D, 3-D — from fixed values with
fixed gradients for STEPS steps. Writes OUT_DIR/steps/<case>/: the tensors' raw bytes before
(init_<k>.bin), each step's gradients (grad_<step>_<k>.bin) and the tensors after each step
(param_<step>_<k>.bin), the state after the last step (<name>_<k>.bin), and case.json (options,
shapes, dtype, and the peak of the live tensors' bytes within each optimizer.step(), from
torch.profiler's memory timeline, the tensors and gradients created under the profiler).

  python3 make_references.py --part training OUT_DIR
A Qwen2 model of two blocks with a vocabulary that weighs (16384 × 64), untied and tied head,
fp32 and bf16 autocast: transformers' Trainer loop (loss = model(...).loss; backward;
clip_grad_norm_(1.0); optimizer.step(); zero_grad) with the Adafactor the Trainer builds for
optim="adafactor" (Trainer.get_optimizer_cls_and_kwargs, its two parameter groups), three steps
on 2 × 128 random tokens under torch.profiler from before the model is built. Writes
OUT_DIR/training/<case>/config.json and peaks.json: the run's peak and the highest peak within an
optimizer.step() (the profiler's Optimizer.step#Adafactor.step record), live tensor bytes.
"""
import argparse
import json
import tempfile
from pathlib import Path

import torch
from torch._C._profiler import _EventType
from torch.profiler import ProfilerActivity, profile
from torch.profiler._memory_profiler import MemoryProfile
from transformers import Qwen2Config, Qwen2ForCausalLM, Trainer, TrainingArguments
from transformers.optimization import Adafactor

STEPS = 6
SHAPES = {"w": [24, 40], "bias": [40], "w3": [3, 8, 10], "norm": [37], "row": [1, 50],
          "wide": [16, 300]}
# Each case: Adafactor's arguments, and the Trainer's grouping (2+ dims with weight_decay, then
# 1-D without) or one group. lr = 1e-3 where relative_step is off.
CASES = {
    "defaults": dict(kwargs={}, trainer_groups=False, weight_decay=0.0),
    "trainer": dict(kwargs=dict(scale_parameter=False, relative_step=False, lr=1e-3),
                    trainer_groups=True, weight_decay=0.0),
    "beta1_decay": dict(kwargs=dict(beta1=0.9), trainer_groups=False, weight_decay=0.1),
    "trainer_beta1_decay": dict(kwargs=dict(scale_parameter=False, relative_step=False, lr=1e-3,
                                            beta1=0.9),
                                trainer_groups=True, weight_decay=0.1),
    "warmup_init": dict(kwargs=dict(warmup_init=True), trainer_groups=False, weight_decay=0.0),
    "bf16": dict(kwargs={}, trainer_groups=False, weight_decay=0.1, dtype=torch.bfloat16),
}
STEP_RECORD = "Optimizer.step#Adafactor.step"


def raw(t):
    return t.detach().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes()


def timeline_peaks(prof):
    """The run's peak and each optimizer.step()'s peak: live bytes of the profiler's timeline."""
    windows = []

    def visit(event):
        if event.name == STEP_RECORD:
            windows.append((event.start_time_ns, event.end_time_ns))
        for child in event.children:
            visit(child)

    for root in prof.profiler.kineto_results.experimental_event_tree():
        visit(root)
    windows.sort()
    live, peak = 0, 0
    step_peaks = [0] * len(windows)
    for t, action, _, size in MemoryProfile(prof.profiler.kineto_results).timeline:
        name = str(action)
        if name.endswith("CREATE"):
            live += size
        elif name.endswith("DESTROY"):
            live -= size
        else:
            continue
        peak = max(peak, live)
        for i, (begin, end) in enumerate(windows):
            if begin <= t <= end:
                step_peaks[i] = max(step_peaks[i], live)
    return peak, step_peaks


def run_case(case, dtype, inits, grads, case_dir):
    """Adafactor's steps under the profiler, from the tensors' creation on; its tensors are freed
    when it returns, before the next case's profiler starts (whose timeline would count them
    out)."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as prof:
        params = [torch.nn.Parameter(t.to(dtype, copy=True)) for t in inits]
        if case["trainer_groups"]:
            groups = [{"params": [p for p in params if p.dim() >= 2],
                       "weight_decay": case["weight_decay"]},
                      {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
        else:
            groups = [{"params": params, "weight_decay": case["weight_decay"]}]
        optimizer = Adafactor(groups, **case["kwargs"])
        for step in range(STEPS):
            for p, g in zip(params, grads[step]):
                p.grad = g.to(dtype, copy=True)
            optimizer.step()
            for k, p in enumerate(params):
                (case_dir / f"param_{step + 1}_{k}.bin").write_bytes(raw(p))
            optimizer.zero_grad(set_to_none=True)
    state = {}
    for k, p in enumerate(params):
        state[str(k)] = sorted(key for key, v in optimizer.state[p].items() if torch.is_tensor(v))
        for key in state[str(k)]:
            (case_dir / f"{key}_{k}.bin").write_bytes(raw(optimizer.state[p][key]))
    return timeline_peaks(prof)[1], state


def make_steps(out_dir):
    for name, case in CASES.items():
        case_dir = out_dir / "steps" / name
        case_dir.mkdir(parents=True, exist_ok=True)
        dtype = case.get("dtype", torch.float32)
        generator = torch.Generator().manual_seed(7)
        inits = []
        for key, shape in SHAPES.items():
            if key == "bias":
                inits.append(torch.zeros(shape))
            elif key == "norm":
                inits.append(torch.ones(shape))
            else:
                inits.append(torch.randn(shape, generator=generator) * 0.05)
        grads = [[torch.randn(s, generator=generator) * 0.01 for s in SHAPES.values()]
                 for _ in range(STEPS)]
        for k, t in enumerate(inits):
            (case_dir / f"init_{k}.bin").write_bytes(raw(t.to(dtype)))
        for step in range(STEPS):
            for k, g in enumerate(grads[step]):
                (case_dir / f"grad_{step + 1}_{k}.bin").write_bytes(raw(g.to(dtype)))
        step_peaks, state = run_case(case, dtype, inits, grads, case_dir)
        options = dict(case["kwargs"])
        options.update(trainer_groups=case["trainer_groups"], weight_decay=case["weight_decay"],
                       dtype=str(dtype).removeprefix("torch."), steps=STEPS,
                       shapes=list(SHAPES.values()), step_peaks=step_peaks, state=state)
        (case_dir / "case.json").write_text(json.dumps(options, indent=1) + "\n")
        print(name, step_peaks)


SHAPE = dict(vocab_size=16384, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
             max_position_embeddings=512, attn_implementation="eager")
ROWS, TOKENS, TRAIN_STEPS, LR = 2, 128, 3, 1e-3


def trainer_optimizer(model, work_dir):
    """The optimizer transformers' Trainer creates for optim="adafactor" (Trainer.create_optimizer:
    its decay and no-decay groups, the class and arguments get_optimizer_cls_and_kwargs gives)."""
    args = TrainingArguments(output_dir=work_dir, optim="adafactor", learning_rate=LR,
                             report_to=[])
    decay = Trainer.get_decay_parameter_names(None, model)
    groups = [
        {"params": [p for n, p in model.named_parameters() if n in decay and p.requires_grad],
         "weight_decay": args.weight_decay},
        {"params": [p for n, p in model.named_parameters() if n not in decay and p.requires_grad],
         "weight_decay": 0.0},
    ]
    optimizer_cls, kwargs = Trainer.get_optimizer_cls_and_kwargs(args, model)
    return optimizer_cls(groups, **kwargs), args.max_grad_norm


def training_peaks(config, bf16, work_dir):
    torch.manual_seed(0)
    ids = torch.randint(0, config.vocab_size, (ROWS, TOKENS))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as prof:
        model = Qwen2ForCausalLM(config).to(torch.float32)
        model.train()
        optimizer, max_grad_norm = trainer_optimizer(model, work_dir)
        for _ in range(TRAIN_STEPS):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            loss = None
    peak, step_peaks = timeline_peaks(prof)
    return peak, max(step_peaks), step_peaks


def make_training(out_dir):
    with tempfile.TemporaryDirectory() as work_dir:
        for tied in (False, True):
            config = Qwen2Config(**SHAPE, tie_word_embeddings=tied)
            for bf16 in (False, True):
                name = ("tied" if tied else "untied") + ("_bf16" if bf16 else "")
                case_dir = out_dir / "training" / name
                case_dir.mkdir(parents=True, exist_ok=True)
                config.save_pretrained(case_dir)
                peak, step_peak, step_peaks = training_peaks(config, bf16, work_dir)
                peaks = dict(peak=peak, optimizer_step_peak=step_peak, step_peaks=step_peaks,
                             rows=ROWS, tokens=TOKENS, steps=TRAIN_STEPS, lr=LR, bf16=bf16)
                (case_dir / "peaks.json").write_text(json.dumps(peaks, indent=1) + "\n")
                print(name, peaks)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=("steps", "training"), required=True)
    parser.add_argument("out_dir")
    args = parser.parse_args()
    torch.set_num_threads(1)
    out_dir = Path(args.out_dir)
    if args.part == "steps":
        make_steps(out_dir)
    else:
        make_training(out_dir)


if __name__ == "__main__":
    main()
