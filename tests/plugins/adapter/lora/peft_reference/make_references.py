"""Builds small random Hugging Face models with a PEFT LoRA adapter, and what they compute, for
tests/plugins/adapter/lora/lora_peft_reference_test.cc.

For each case: transformers builds a 2-layer model (the real head layout), saves it with
save_pretrained (config.json + model.safetensors); PEFT wraps it with a LoraConfig (the case's
rank, alpha, targets, rsLoRA), whose factors are then drawn at random (B too: PEFT's zero B
would leave B's gradient the only non-trivial one). On fixed tokens it records, in
reference.safetensors: the input ids, the logits, the next-token loss (mean over the predicted
positions), and every factor with its gradient, named "<layer>.<module>.A" / ".B" (+ ".grad").

  python3 make_references.py OUT_DIR
"""
import json
import sys
from pathlib import Path

import torch
from peft import LoraConfig, get_peft_model
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM, Phi3Config, Phi3ForCausalLM

SHAPE = dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
             max_position_embeddings=256, initializer_range=0.1, attn_implementation="eager")
TOKENS = 24


def cases():
    # (name, model class, config, LoRA settings as memsweep's [strategies.adapter] writes them)
    yield ("llama_all_linear", LlamaForCausalLM,
           LlamaConfig(**SHAPE, attention_bias=True, tie_word_embeddings=False),
           dict(rank=4, alpha=8.0, target_modules="all-linear", use_rslora=False))
    yield ("llama_qv_rslora", LlamaForCausalLM, LlamaConfig(**SHAPE, tie_word_embeddings=True),
           dict(rank=8, alpha=4.0, target_modules=["q_proj", "v_proj"], use_rslora=True))
    yield ("phi3_fused", Phi3ForCausalLM,
           Phi3Config(**SHAPE, partial_rotary_factor=0.75, tie_word_embeddings=False,
                      pad_token_id=0),
           dict(rank=4, alpha=16.0, target_modules=["qkv_proj", "gate_up_proj", "down_proj"],
                use_rslora=False))


def main(out_dir):
    out = Path(out_dir)
    for name, cls, config, lora in cases():
        torch.manual_seed(0)
        model = cls(config).float()
        with torch.no_grad():  # random biases too (transformers starts them at zero)
            for pname, p in model.named_parameters():
                if pname.endswith(".bias"):
                    p.normal_(0.0, 0.1)
        case = out / name
        model.save_pretrained(case, safe_serialization=True)
        (case / "lora.json").write_text(json.dumps(lora))
        peft_model = get_peft_model(model, LoraConfig(
            r=lora["rank"], lora_alpha=lora["alpha"], target_modules=lora["target_modules"],
            use_rslora=lora["use_rslora"], lora_dropout=0.0, bias="none"))
        factors = {}
        with torch.no_grad():
            for pname, p in peft_model.named_parameters():
                if ".lora_A." in pname or ".lora_B." in pname:
                    p.normal_(0.0, 0.2)
                    layer = pname.split(".layers.")[1].split(".")[0]
                    module = pname.split(".lora_")[0].split(".")[-1]
                    factors[f"{layer}.{module}.{'A' if '.lora_A.' in pname else 'B'}"] = p
        torch.manual_seed(1)
        ids = torch.randint(0, config.vocab_size, (2, TOKENS))
        logits = peft_model(input_ids=ids).logits
        loss = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, logits.size(-1)).float(), ids[:, 1:].reshape(-1))
        loss.backward()
        tensors = {"input_ids": ids.contiguous(), "logits": logits.detach().contiguous(),
                   "loss": loss.detach().reshape(1)}
        for key, p in factors.items():
            tensors[key] = p.detach().contiguous()
            tensors[key + ".grad"] = p.grad.detach().contiguous()
        save_file(tensors, str(case / "reference.safetensors"))


if __name__ == "__main__":
    main(sys.argv[1])
