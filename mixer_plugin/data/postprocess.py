#!/usr/bin/env python
"""Turn fairseq-generate output back into text, undoing what a recipe did.

    python -m mixer_plugin.data.postprocess GENERATE_LOG --prep ROOT/prep.json --out-dir DIR

Reads the ``H-<id>`` lines (hypotheses in subwords), puts them in corpus order, checks
that every sentence of the split has one, and writes:

* ``DIR/hyp.tok``: subwords removed, still tokenized as the training data (tokenized
  BLEU against ``ref/<split>.tok.<tgt>``, as the WMT/IWSLT papers report it);
* ``DIR/hyp.txt``: also detruecased and detokenized (Moses detokenizer) where the
  recipe tokenized; the text sacrebleu, chrF and ROUGE compare with the raw reference.

The recipe's ``prep.json`` says which subword model, tokeniser and case handling to undo.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional

from .subwords import decode_subword
from .text import count_lines, write_lines
from .tokenize import detruecase, moses_detokenize
from .workspace import PrepError, main_wrapper


def hypotheses(log: Path) -> Dict[int, str]:
    hyps = {}
    for line in open(log, encoding="utf-8"):
        if line.startswith("H-"):
            tag, _score, *text = line.rstrip("\n").split("\t")
            idx = int(tag[2:])
            if idx in hyps:
                raise PrepError(f"{log}: two hypotheses for sentence {idx} (use --nbest 1)")
            hyps[idx] = text[0] if text else ""
    return hyps


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log", type=Path, help="fairseq-generate stdout")
    p.add_argument("--prep", type=Path, required=True, help="the recipe's prep.json")
    p.add_argument("--split", default="test", help="the generated split (for the sentence count check)")
    p.add_argument("--out-dir", type=Path, required=True)
    args = p.parse_args(argv)
    if not args.prep.is_file():
        raise PrepError(f"--prep {args.prep} not found (prepare the dataset first: mixer-prepare NAME)")
    prep = json.loads(args.prep.read_text())
    root = args.prep.parent
    hyps = hypotheses(args.log)
    want = prep.get("segments", {}).get(args.split)
    ref = prep.get("references", {}).get(args.split, {})
    if ref.get("detok") and (root / ref["detok"]).is_file():
        want = count_lines(root / ref["detok"])
    if want is None:
        raise PrepError(f"{args.prep} does not know split {args.split!r}")
    if sorted(hyps) != list(range(want)):
        missing = sorted(set(range(want)) - set(hyps))
        raise PrepError(
            f"{args.log}: {len(hyps)} hypotheses for {want} sentences "
            f"(missing ids {missing[:5]}...; use --required-batch-size-multiple 1)"
        )
    tgt = prep["tgt"]
    model = prep["subword_model"].get(tgt)
    tok = decode_subword([hyps[i] for i in range(want)], prep["subword"], root / model if model else None)
    if prep.get("truecase") or prep.get("truecased_input"):
        tok = detruecase(tok)  # the tokenized references keep the corpus' own case
    text = tok
    if prep.get("tokenize") == "moses" or prep.get("moses_tokenized_input"):
        text = moses_detokenize(text, tgt)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    write_lines(args.out_dir / "hyp.tok", tok)
    write_lines(args.out_dir / "hyp.txt", text)
    print(f"{want} hypotheses -> {args.out_dir}/hyp.txt (detokenized), hyp.tok (tokenized)")


def cli() -> None:
    main_wrapper("postprocess", lambda: main(sys.argv[1:]))


if __name__ == "__main__":
    cli()
