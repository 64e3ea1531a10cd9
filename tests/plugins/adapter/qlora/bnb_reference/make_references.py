"""NF4 quantisation by bitsandbytes (its CPU backend), for
tests/plugins/adapter/qlora/nf4_bnb_reference_test.cc.

Random weights of a few shapes (a short last block of 64 and of 256 among them) are quantised
with functional.quantize_4bit(blocksize=64, quant_type="nf4", compress_statistics=True) and
dequantised with dequantize_4bit; reference.safetensors holds, per case, the weight, the packed
codes, the 8-bit absmax codes, the second-level absmax, the offset and the dequantised weight,
and once the NF4 levels and the dynamic map.

  python3 make_references.py OUT_DIR
"""
import sys
from pathlib import Path

import torch
import bitsandbytes.functional as F
from safetensors.torch import save_file

SHAPES = {"square": (256, 256), "wide": (96, 1024), "ragged": (50, 64 * 3 + 2),
          "scaled": (128, 640)}


def main(out_dir):
    torch.manual_seed(0)
    tensors = {}
    for name, shape in SHAPES.items():
        w = torch.randn(shape) * (0.02 if name != "scaled" else 3.0)
        w[0, :5] = 0.0  # exact zeros in a block
        q, st = F.quantize_4bit(w, blocksize=64, compress_statistics=True, quant_type="nf4")
        tensors[f"{name}.weight"] = w.contiguous()
        # Codes as int32: memsweep's safetensors reader takes no U8.
        tensors[f"{name}.codes"] = q.reshape(-1).to(torch.int32).contiguous()
        tensors[f"{name}.absmax_codes"] = st.absmax.reshape(-1).to(torch.int32).contiguous()
        tensors[f"{name}.absmax_scales"] = st.state2.absmax.reshape(-1).contiguous()
        tensors[f"{name}.offset"] = st.offset.reshape(1).float().contiguous()
        tensors[f"{name}.dequantized"] = F.dequantize_4bit(q, st).contiguous()
        tensors["nf4_levels"] = st.code.float().contiguous()
        tensors["dynamic_map"] = st.state2.code.float().contiguous()
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(Path(out_dir) / "reference.safetensors"))


if __name__ == "__main__":
    main(sys.argv[1])
