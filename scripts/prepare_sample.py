#!/usr/bin/env python
"""Make data/en-de-sample/ from the shared EN-DE corpus: a small, deterministic sample
that is bundled with the repo for the quickstart and the tests.

Each split is sampled by evenly spaced line indices, floor(i * N / n) for i in 0..n-1,
so the sample is deterministic (no RNG involved) and keeps the corpus's mix of
sources (the corpus files are grouped by source).  en and de stay aligned.

    python scripts/prepare_sample.py \
        --src /work/shared/data/en-de --out data/en-de-sample \
        --train 20000 --valid 1000 --test 1000
"""

import argparse
import os
import sys

SPLITS = ("train", "valid", "test")
LANGS = ("en", "de")


def read_lines(path):
    with open(path, encoding="utf-8", newline="\n") as f:
        return f.read().split("\n")[:-1] if os.path.getsize(path) else []


def even_indices(total, n):
    if n >= total:
        return list(range(total))
    return [i * total // n for i in range(n)]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src", default="/work/shared/data/en-de")
    p.add_argument("--out", default="data/en-de-sample")
    p.add_argument("--train", type=int, default=20000)
    p.add_argument("--valid", type=int, default=1000)
    p.add_argument("--test", type=int, default=1000)
    args = p.parse_args()

    os.makedirs(args.out, exist_ok=True)
    total_bytes = 0
    for split in SPLITS:
        texts = {}
        for lang in LANGS:
            path = os.path.join(args.src, f"{split}.{lang}")
            if not os.path.isfile(path):
                sys.exit(f"prepare_sample: missing input file {path}")
            texts[lang] = read_lines(path)
        if len(texts["en"]) != len(texts["de"]):
            sys.exit(f"prepare_sample: {split}.en and {split}.de differ in line count "
                     f"({len(texts['en'])} vs {len(texts['de'])})")
        idx = even_indices(len(texts["en"]), getattr(args, split))
        for lang in LANGS:
            out = os.path.join(args.out, f"{split}.{lang}")
            with open(out, "w", encoding="utf-8", newline="\n") as f:
                for i in idx:
                    f.write(texts[lang][i] + "\n")
            total_bytes += os.path.getsize(out)
        print(f"{split}: {len(idx)} of {len(texts['en'])} pairs")
    print(f"total {total_bytes / 1e6:.2f} MB in {args.out}")


if __name__ == "__main__":
    main()
