"""bitsandbytes' AdamW on its CPU backend (bitsandbytes 0.50.2), for
tests/plugins/optimizer/adamw_8bit/bnb_reference_test.cc.

reference.safetensors holds
  - the dynamic maps: functional.create_dynamic_map(signed=True / False);
  - blockwise quantisation (functional.quantize_blockwise / dequantize_blockwise, blocksize 256,
    the CPU kernel): per case the values, the codes, the absmax values and the dequantised
    values, for signed values with the signed map and non-negative ones with the unsigned map,
    with a short last block and a block of zeros among them;
  - six steps of bnb.optim.AdamW8bit and bnb.optim.AdamW32bit (lr 1e-2, betas (0.9, 0.999),
    eps 1e-8, weight_decay 0.1) on four tensors (1,000 elements: below min_8bit_size, fp32
    moments; 4,096; 23,100: a short last block; 25,600), the same gradients for both: after
    every step each tensor's values and its state1, state2 (and absmax1, absmax2 for 8 bits).
Codes are stored as int32 (memsweep's safetensors reader takes no U8). Tensors stay at or below
32,768 elements, so that no elementwise ATen kernel splits them between threads (how many
threads run changes which elements take a kernel's vectorised path).

  python3 make_references.py OUT_DIR
"""
import sys
from pathlib import Path

import torch
import bitsandbytes as bnb
import bitsandbytes.functional as F
from safetensors.torch import save_file

QUANT_CASES = {"one_block": 256, "ragged": 256 * 7 + 100, "many": 256 * 40}
SHAPES = {"small": (1000,), "exact": (64, 64), "ragged": (300, 77), "wide": (128, 200)}
STEPS = 6
HYPER = dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)


def as_codes(t):
    return t.reshape(-1).to(torch.int32).contiguous()


def main(out_dir):
    torch.manual_seed(0)
    out = {}
    maps = {"signed": F.create_dynamic_map(signed=True),
            "unsigned": F.create_dynamic_map(signed=False)}
    for sign, code in maps.items():
        out[f"map.{sign}"] = code.float().contiguous()
    for name, n in QUANT_CASES.items():
        for sign, code in maps.items():
            x = torch.randn(n) * 0.05
            if sign == "unsigned":
                x = x * x
            if n > 512:
                x[256:512] = 0.0  # a block of zeros
            q, state = F.quantize_blockwise(x, code=code, blocksize=256)
            key = f"quant.{name}.{sign}"
            out[f"{key}.values"] = x.contiguous()
            out[f"{key}.codes"] = as_codes(q)
            out[f"{key}.absmax"] = state.absmax.contiguous()
            out[f"{key}.dequantized"] = F.dequantize_blockwise(q, state).contiguous()

    params = {name: torch.randn(shape) * 0.1 for name, shape in SHAPES.items()}
    grads = [{name: torch.randn(shape) * 0.01 for name, shape in SHAPES.items()}
             for _ in range(STEPS)]
    for name, p in params.items():
        out[f"init.{name}"] = p.contiguous()
        for step in range(STEPS):
            out[f"grad.{step}.{name}"] = grads[step][name].contiguous()
    for bits, cls in (("8bit", bnb.optim.AdamW8bit), ("32bit", bnb.optim.AdamW32bit)):
        tensors = {name: torch.nn.Parameter(p.clone()) for name, p in params.items()}
        opt = cls(list(tensors.values()), **HYPER)
        for step in range(STEPS):
            for name, t in tensors.items():
                t.grad = grads[step][name].clone()
            opt.step()
            for name, t in tensors.items():
                key = f"{bits}.{step}.{name}"
                out[f"{key}.param"] = t.detach().clone().contiguous()
                state = opt.state[t]
                for k in ("state1", "state2", "absmax1", "absmax2"):
                    if k not in state:
                        continue
                    v = state[k]
                    is_codes = v.dtype == torch.uint8
                    out[f"{key}.{k}"] = as_codes(v) if is_codes else v.clone().contiguous()
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    save_file(out, str(Path(out_dir) / "reference.safetensors"))


if __name__ == "__main__":
    main(sys.argv[1])
