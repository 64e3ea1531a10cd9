"""Makes the tokenizer in this folder: a byte-level BPE with Llama-3's pre-tokenizer (its Split
regex, Isolated, then ByteLevel; merges ignored for whole words in the vocabulary, as Llama-3
sets), 8,192 tokens, trained by Hugging Face `tokenizers` on the bundled corpus (The Devil's
Dictionary), with Llama-3's <|begin_of_text|> and <|end_of_text|> as BOS and EOS. A real
tokenizer small enough to bundle, for experiments that shrink a real architecture for the CPU
(experiments/seed-gsa-tuning.toml); docs/models.md says how memsweep reads it.

  python3 make_tokenizer.py   # with tokenizers==0.23.3 (tools/setup-references installs it)
"""
import json
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
BOS, EOS = "<|begin_of_text|>", "<|end_of_text|>"

here = Path(__file__).resolve().parent
corpus = here.parent.parent / "data" / "devils-dictionary.jsonl"
texts = [json.loads(line)["text"] for line in open(corpus) if line.strip()]
tokenizer = Tokenizer(models.BPE(ignore_merges=True))
tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
    pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated"),
    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
tokenizer.decoder = decoders.ByteLevel()
tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
    vocab_size=8192, special_tokens=[BOS, EOS],
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
tokenizer.save(str(here / "tokenizer.json"))
json.dump({"bos_token": BOS, "eos_token": EOS, "add_bos_token": True},
          open(here / "tokenizer_config.json", "w"), indent=2)
print(f"{tokenizer.get_vocab_size()} tokens, "
      f"{sum(len(tokenizer.encode(t).ids) for t in texts)} ids over {len(texts)} documents")
