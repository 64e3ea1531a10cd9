"""Builds small random Hugging Face models, one per architecture memsweep reads, and what they
compute, for tests/core/model/hf_reference_test.cc.

For each case: transformers builds a 2-layer model from a shrunk config with the real head layout
(biases, rope scaling, partial rotary, sliding window, tied or untied embeddings), random weights
(biases too), and saves it with save_pretrained (config.json + model.safetensors). On fixed tokens
it records, in reference.safetensors: the input ids, the logits, the next-token loss (mean over
the predicted positions, fp32), and the gradient of one parameter of each kind.

  python3 make_references.py OUT_DIR
"""
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM,
                          Phi3Config, Phi3ForCausalLM, Qwen2Config, Qwen2ForCausalLM)

# initializer_range 0.1 (not 0.02): attention sharp enough that rotary details (scaling,
# partial rotation) move the logits well above the comparison's tolerance.
SHAPE = dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
             max_position_embeddings=256, initializer_range=0.1, attn_implementation="eager")
TOKENS = 48  # past llama3's and the long phi3 case's original length (16, 32), within the others


def cases():
    yield "llama", LlamaForCausalLM, LlamaConfig(
        **SHAPE, head_dim=32, attention_bias=True, mlp_bias=True, tie_word_embeddings=False,
        rope_theta=500000.0,
        rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                          high_freq_factor=4.0, original_max_position_embeddings=16))
    yield "llama_tied", LlamaForCausalLM, LlamaConfig(**SHAPE, tie_word_embeddings=True)
    yield "mistral", MistralForCausalLM, MistralConfig(**SHAPE, sliding_window=128,
                                                       tie_word_embeddings=False)
    yield "qwen2", Qwen2ForCausalLM, Qwen2Config(**SHAPE, tie_word_embeddings=True,
                                                 rope_theta=1000000.0)
    rotary_half = int(SHAPE["hidden_size"] // SHAPE["num_attention_heads"] * 0.75) // 2
    # LongRoPE: short factors while the positions stay within the original length (64 > 48),
    # long factors past it (32 < 48).
    for name, original in (("phi3_short", 64), ("phi3_long", 32)):
        yield name, Phi3ForCausalLM, Phi3Config(
            **{**SHAPE, "max_position_embeddings": 1024}, original_max_position_embeddings=original,
            partial_rotary_factor=0.75, tie_word_embeddings=False, pad_token_id=0,
            rope_scaling=dict(type="longrope",
                              short_factor=[1.0 + 0.05 * i for i in range(rotary_half)],
                              long_factor=[2.0 + 0.1 * i for i in range(rotary_half)]))


# One parameter of each kind whose gradient is compared (Hugging Face names).
def graded(name):
    kinds = ("embed_tokens", "layers.1.input_layernorm", "layers.0.self_attn.q_proj",
             "layers.0.self_attn.qkv_proj", "layers.0.self_attn.k_proj.bias",
             "layers.1.self_attn.o_proj", "layers.0.mlp.gate_proj.weight",
             "layers.0.mlp.gate_up_proj", "layers.1.mlp.down_proj", "model.norm", "lm_head")
    return any(k in name for k in kinds)


def main(out_dir):
    torch.manual_seed(0)
    ids = torch.randint(3, SHAPE["vocab_size"], (2, TOKENS))
    for name, model_class, config in cases():
        torch.manual_seed(1)
        model = model_class(config).float()
        with torch.no_grad():
            for param_name, p in model.named_parameters():
                if param_name.endswith("bias") or "norm" in param_name:
                    p.normal_(0.5 if "norm" in param_name else 0.0, 0.1)
        target = Path(out_dir) / name
        model.save_pretrained(target, safe_serialization=True)
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        tensors = {"input_ids": ids, "logits": out.logits.detach().contiguous(),
                   "loss": out.loss.detach().reshape(1)}
        for param_name, p in model.named_parameters():
            if graded(param_name) and p.grad is not None:
                tensors["grad." + param_name] = p.grad.contiguous()
        save_file(tensors, str(target / "reference.safetensors"))
        print(f"{name}: loss {out.loss.item():.6f}, {len(tensors) - 3} gradients")


if __name__ == "__main__":
    main(sys.argv[1])
