"""The interacting-head paper's rule for the number of heads (§3.4, its formula (13)):

    max heads = d_model / n_mean

where n_mean is the mean sequence length of the TRAINING set: a head should be at least
as wide as a typical sentence is long (Bhojanapalli et al.: a head of size d_p < n cannot
express an arbitrary n x n attention map, the low-rank bottleneck).  The same n_mean is
the paper's head size for the fixed-head-size baseline (§4.6.2, §4.7), the
``fixed_head:head_dim=`` option.  The paper's values: n_mean = 20 (IWSLT16 DE-EN),
25 (WMT17 EN-DE), 26 (WMT17 EN-CS) with d_model = 512 (§4.1).

    mixer-max-heads DATA_BIN                      # fairseq-preprocess output dir
    mixer-max-heads DATA_BIN --d-model 256 --side tgt
    mixer-max-heads DATA_BIN/train.en-de.en       # one binarized dataset (prefix)
    mixer-max-heads DATA_BIN --json out.json

Lengths are in the dataset's own tokens (subwords after BPE / sentencepiece, as the
paper counts them), read from the ``.idx`` sizes only.  fairseq-preprocess appends an
end-of-sentence token to every sentence; it is not counted unless ``--count-eos``.
``--side both`` (default) averages over every source and target sentence.
"""

import argparse
import glob
import json
import math
import os
import re
import sys
from typing import Dict, List, NoReturn, Optional


def die(msg: str) -> NoReturn:
    print(f"mixer-max-heads: error: {msg}", file=sys.stderr)
    sys.exit(2)


def find_prefixes(path: str, split: str, src: Optional[str], tgt: Optional[str]) -> Dict[str, str]:
    """{language: dataset prefix} for DATA_BIN (a directory) or one dataset prefix."""
    if not os.path.isdir(path):
        if os.path.isfile(path + ".idx"):
            return {os.path.basename(path).rsplit(".", 1)[-1]: path}
        die(f"no such directory or binarized dataset prefix: {path}")
    if (src is None) != (tgt is None):
        die("give both --source-lang and --target-lang, or neither")
    pattern = re.compile(rf"^{re.escape(split)}\.([^.]+)-([^.]+)\.([^.]+)\.idx$")
    pairs = set()
    for f in glob.glob(os.path.join(glob.escape(path), f"{split}.*.idx")):
        m = pattern.match(os.path.basename(f))
        if m and m.group(3) in (m.group(1), m.group(2)):
            pairs.add((m.group(1), m.group(2)))
    if src is not None:
        pairs &= {(src, tgt)}
        if not pairs:
            die(
                f"no binarized {split!r} split for {src}-{tgt} in {path} "
                f"(expected {split}.{src}-{tgt}.{src}.idx from fairseq-preprocess)"
            )
    if not pairs:
        if os.path.isfile(os.path.join(path, f"{split}.idx")):  # monolingual (e.g. a classification input)
            return {"text": os.path.join(path, split)}
        die(f"no binarized {split!r} split in {path} (expected {split}.SRC-TGT.LANG.idx from fairseq-preprocess)")
    if len(pairs) > 1:
        names = ", ".join(sorted(f"{a}-{b}" for a, b in pairs))
        die(f"several language pairs in {path} ({names}); choose one with --source-lang and --target-lang")
    a, b = pairs.pop()
    return {lang: os.path.join(path, f"{split}.{a}-{b}.{lang}") for lang in (a, b)}


def read_sizes(prefix: str) -> List[int]:
    """Token counts (EOS included) of every sentence of one binarized dataset."""
    from fairseq.data import indexed_dataset

    for ext in (".idx", ".bin"):
        if not os.path.isfile(prefix + ext):
            die(f"missing {prefix + ext} (a binarized dataset needs both .idx and .bin)")
    try:
        impl = indexed_dataset.infer_dataset_impl(prefix)
        if impl not in ("mmap", "cached", "huffman"):
            raise ValueError("unknown index header")
        dataset = indexed_dataset.make_dataset(prefix, impl)
        sizes = [int(n) for n in dataset.sizes]
    except Exception as e:  # a truncated or foreign file: one line, naming it
        die(f"cannot read {prefix}.idx as a fairseq binarized dataset ({type(e).__name__}: {e})".replace("\n", " "))
    if not sizes:
        die(f"{prefix}.idx holds no sentences")
    return sizes


def largest_divisor_at_most(n: int, limit: int) -> int:
    return max(h for h in range(1, max(1, limit) + 1) if n % h == 0)


def rule(d_model: int, mean_len: float) -> dict:
    """§3.4: the maximum number of heads and what it means for the mixers' options."""
    bound = d_model / mean_len
    at_most = max(1, math.floor(bound))
    divides = largest_divisor_at_most(d_model, at_most)
    return {
        "d_model": d_model,
        "mean_length": mean_len,
        "max_heads": bound,  # formula (13), unrounded
        "max_heads_int": at_most,
        "max_heads_dividing_d_model": divides,  # what attn / interacting can use (H | d_model)
        "head_dim_at_that": d_model // divides,
        "max_heads_power_of_2": 2 ** int(math.log2(at_most)),
        "fixed_head_dim": math.ceil(mean_len),  # fixed_head:head_dim=: a head no narrower than n (§3.4)
    }


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", help="fairseq-preprocess output directory, or one dataset prefix (PATH for PATH.idx)")
    ap.add_argument("--split", default="train", help="split to measure (default: train, as the paper)")
    ap.add_argument("-s", "--source-lang", help="source language, when DATA_BIN holds several pairs")
    ap.add_argument("-t", "--target-lang", help="target language")
    ap.add_argument(
        "--side",
        choices=("both", "src", "tgt"),
        default="both",
        help="which sentences the mean is taken over (default: both sides)",
    )
    ap.add_argument("--d-model", type=int, default=512, help="model width (default 512, the paper's)")
    ap.add_argument("--count-eos", action="store_true", help="count the end-of-sentence token in each length")
    ap.add_argument("--json", metavar="OUT", help="also write the figures as JSON")
    args = ap.parse_args(argv)
    if args.d_model < 1:
        ap.error(f"argument --d-model: must be >= 1, got {args.d_model}")

    prefixes = find_prefixes(args.data, args.split, args.source_lang, args.target_lang)
    langs = list(prefixes)
    if len(langs) == 2 and args.side != "both":
        langs = langs[:1] if args.side == "src" else langs[1:]
    elif len(langs) == 1 and args.side != "both":
        die(f"--side {args.side} needs a language pair; {args.data} is one dataset")
    eos = 0 if args.count_eos else 1
    per_lang, lengths = {}, []
    for lang in list(prefixes):
        sizes = [n - eos for n in read_sizes(prefixes[lang])]
        per_lang[lang] = {"sentences": len(sizes), "mean_length": sum(sizes) / len(sizes), "max_length": max(sizes)}
        if lang in langs:
            lengths.extend(sizes)
    mean_len = sum(lengths) / len(lengths)
    if mean_len <= 0:
        die(f"the mean length of {args.data} is {mean_len}; the rule needs a positive mean")
    result = {
        "data": args.data,
        "split": args.split,
        "side": args.side,
        "count_eos": args.count_eos,
        "per_language": per_lang,
        **rule(args.d_model, mean_len),
    }

    what = "tokens incl. EOS" if args.count_eos else "tokens, EOS not counted"
    for lang, s in per_lang.items():
        print(f"{lang}: {s['sentences']} sentences, mean length {s['mean_length']:.2f} ({what}), max {s['max_length']}")
    r = result
    print(f"mean length over {args.side}: n = {mean_len:.2f}")
    print(
        f"max heads (§3.4) = d_model / n = {args.d_model} / {mean_len:.2f} = {r['max_heads']:.2f}: "
        f"at most {r['max_heads_int']} heads; the largest dividing d_model is {r['max_heads_dividing_d_model']} "
        f"(head size {r['head_dim_at_that']}); power of 2: {r['max_heads_power_of_2']}"
    )
    print(f"fixed head size (§4.6.2, fixed_head:head_dim=): {r['fixed_head_dim']}")
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        os.replace(tmp, args.json)


if __name__ == "__main__":
    main()
