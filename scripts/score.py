#!/usr/bin/env python
"""Score detokenized hypotheses against one detokenized reference with sacrebleu:
corpus BLEU and chrF, each printed with its sacrebleu signature.

    python scripts/score.py HYP REF [--json OUT]

Both files are plain text, one segment per line, aligned line by line.
"""

import argparse
import json
import os
import sys


def die(msg):
    print(f"score.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def read_lines(path, what):
    if not os.path.isfile(path):
        die(f"{what} file not found: {path}")
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        die(f"{what} file is not valid UTF-8: {path} ({e})")
    # Split on "\n" only (str.splitlines would also split on U+2028, \x0c, ...).
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("hyp", help="hypothesis file (detokenized, one segment per line)")
    p.add_argument("ref", help="reference file (detokenized, one segment per line)")
    p.add_argument("--json", metavar="OUT", help="also write the scores as JSON to OUT")
    args = p.parse_args(argv)

    hyps = read_lines(args.hyp, "hypothesis")
    refs = read_lines(args.ref, "reference")
    if len(hyps) != len(refs):
        die(f"line counts differ: hypothesis {args.hyp} has {len(hyps)} lines, "
            f"reference {args.ref} has {len(refs)}")
    if not refs:
        die(f"reference file is empty: {args.ref}")

    from sacrebleu.metrics import BLEU, CHRF

    bleu, chrf = BLEU(), CHRF()
    b = bleu.corpus_score(hyps, [refs])
    c = chrf.corpus_score(hyps, [refs])
    result = {
        "hyp": args.hyp,
        "ref": args.ref,
        "lines": len(refs),
        "bleu": round(b.score, 2),
        "bleu_detail": str(b),
        "bleu_signature": str(bleu.get_signature()),
        "chrf": round(c.score, 2),
        "chrf_signature": str(chrf.get_signature()),
    }
    print(b)
    print(f"  signature: {result['bleu_signature']}")
    print(c)
    print(f"  signature: {result['chrf_signature']}")
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, args.json)


if __name__ == "__main__":
    main()
