"""SentencePiece models and their ids, made by the `sentencepiece` Python package (the same
library's Python build), for tests/core/data/sentencepiece_tokenizer_test.cc.

Models: the published Mistral-7B-v0.1 tokenizer.model (32,000 pieces, BPE with byte fallback, as
the pinned mistral-common package carries it: mistral_common/data/tokenizer.model.v1), and two
trained here on the bundled corpus (The Devil's Dictionary) — a Llama-2-style BPE with byte
fallback and digits split, and a unigram model with NFKC normalisation (SentencePiece's default).
For every corpus document and the Unicode torture text of the byte-level BPE test, the ids
`sentencepiece` gives (no BOS/EOS) are written beside each model.

  python3 make_references.py CORPUS.jsonl OUT_DIR
"""
import importlib.util
import io
import json
import shutil
import sys
from pathlib import Path

import sentencepiece as spm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tokenizer_reference"))
from make_references import TORTURE  # noqa: E402  (the same torture text as the BPE test)


def train(corpus, **options):
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus), model_writer=model,
                                   vocab_size=2000, num_threads=1, **options)
    return model.getvalue()


def main(corpus_path, out_dir):
    corpus = [json.loads(line)["text"] for line in open(corpus_path) if line.strip()]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # Found without importing the package (its __init__ needs dependencies not installed here).
    package = importlib.util.find_spec("mistral_common").submodule_search_locations[0]
    shutil.copy(Path(package) / "data" / "tokenizer.model.v1", out / "mistral_published.model")
    (out / "llama2_style.model").write_bytes(train(
        corpus, model_type="bpe", byte_fallback=True, split_digits=True,
        normalization_rule_name="identity", remove_extra_whitespaces=False,
        allow_whitespace_only_pieces=True, character_coverage=0.9995))
    (out / "unigram.model").write_bytes(train(corpus, model_type="unigram"))
    texts = corpus + TORTURE
    for name in ["mistral_published", "llama2_style", "unigram"]:
        sp = spm.SentencePieceProcessor(model_file=str(out / f"{name}.model"))
        ids = [sp.encode(t) for t in texts]
        json.dump({"texts": texts, "ids": ids}, open(out / f"{name}.ids.json", "w"))
        print(f"{name}: {sp.get_piece_size()} pieces, {len(texts)} texts, {sum(map(len, ids))} ids")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
