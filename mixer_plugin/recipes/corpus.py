#!/usr/bin/env python
"""corpus: bring your own parallel corpus.  Plain-text files in, binarized data and an
experiment file out, so any arch can run on your language pair without a recipe of
its own.

    mixer-prepare corpus --corpus DIR --src fr --tgt en --config experiments/fr_en.yaml
    mixer-run experiments/fr_en.yaml

``DIR`` holds ``{train,valid,test}.{SRC,TGT}`` (plain or .xz), one segment a line,
aligned line by line, untokenized.  The text is kept as it is; one joint sentencepiece
model (``--vocab``, unigram, 8k by default) is learned on train, then
fairseq-preprocess --joined-dictionary.  An optional ``test.source`` (one name per
test line) gives per-source scores.  ``--config`` writes an experiment file that
trains the CPU-size transformer and multiNN on the result (edit its models and budget).
The data goes where ``mixer-run`` looks for that file's data (``work/data/corpus.<hash>``
of the arguments), so the run uses it instead of preparing it again; on another machine
``mixer-run`` prepares it itself.
"""

import argparse
import shlex
import sys
from pathlib import Path
from typing import List, Optional

import yaml

from mixer_plugin.data.debian import copy_split_files, test_sources
from mixer_plugin.data.pipeline import Parallel, run_pipeline
from mixer_plugin.data.text import write_lines
from mixer_plugin.data.workspace import (
    PLACE,
    PrepError,
    Workspace,
    add_subword_args,
    common_parser,
    data_root,
    main_wrapper,
)
from mixer_plugin.paths import shown

RECIPE = "corpus"
RECIPES = {RECIPE: []}


# options that change where or how often the data is made, not the data: left out of the
# experiment file's prepare: (so a rerun of it never redoes its data) -> how many values follow
NOT_THE_DATA = {**PLACE, "--config": 1}


def prepare_args(argv: List[str], corpus: Path) -> List[str]:
    """The arguments that make the data, as the experiment file's ``prepare:`` passes them
    to this recipe: the command line less ``NOT_THE_DATA``, with ``--corpus`` absolute."""
    out, tokens = [], iter(argv)
    for token in tokens:
        name, eq, _ = token.partition("=")
        if name in NOT_THE_DATA or name == "--corpus":
            if not eq:
                for _ in range(NOT_THE_DATA.get(name, 1)):
                    next(tokens, None)
            if name == "--corpus":
                out += ["--corpus", str(corpus)]
            continue
        out.append(token)
    return out


def experiment_file(args: argparse.Namespace, prepare: List[str]) -> dict:
    """A starting experiment: the leaderboard's CPU recipe (experiments/leaderboard.yaml), tuned on
    the 105k-pair Debian corpus (results/baseline_tuning.md); a much smaller corpus may want
    --dropout 0.1 or more.  No jobs/threads: mixer-run fits them to the machine it runs on."""
    return {
        "name": f"corpus_{args.src}_{args.tgt}",
        "title": f"{args.src}->{args.tgt} on {args.corpus.name}",
        "data": RECIPE,
        "prepare": shlex.join(prepare),
        "train": "--share-all-embeddings --optimizer adam --adam-betas '(0.9, 0.98)' --clip-norm 0.0 --lr 0.002 "
        "--lr-scheduler inverse_sqrt --warmup-updates 400 --warmup-init-lr 1e-07 --dropout 0.0 "
        "--criterion label_smoothed_cross_entropy --label-smoothing 0.1 --max-tokens 2048 --max-update 3750 "
        "--no-epoch-checkpoints --save-interval-updates 250 --keep-interval-updates 5 --num-workers 0 "
        "--log-format simple --log-interval 50",
        "generate": {"subset": "test", "average_last": 5, "flags": "--beam 4 --max-len-a 1.2 --max-len-b 10"},
        "score": {"metrics": ["bleu", "chrf"], "baseline": "transformer"},
        "models": {
            "transformer": {"arch": "mixer_small_attn"},
            "multinn": {
                "arch": "mixer_small_attn",
                "train": "--encoder-layers 3 --encoder-mixers ngram:n=5:global=1:proj=slice:out=none "
                "--decoder-mixers ngram:n=5:proj=slice:out=none",
            },
        },
    }


def main(argv: Optional[List[str]] = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    p = common_parser(RECIPE, __doc__)
    p.add_argument("--corpus", type=Path, required=True, help="folder with {train,valid,test}.{SRC,TGT}")
    p.add_argument("--src", required=True, help="source language suffix of the files")
    p.add_argument("--tgt", required=True, help="target language suffix of the files")
    p.add_argument("--config", type=Path, help="also write an experiment file for mixer-run here")
    add_subword_args(p, kind="spm", vocab=8000, spm_type="unigram")
    args = p.parse_args(argv)
    if args.src == args.tgt:
        raise PrepError("--src and --tgt must differ")
    if not args.corpus.is_dir():
        raise PrepError(f"--corpus {args.corpus} is not a folder")
    args.corpus = args.corpus.resolve()  # the file's prepare: and the steps' options name it so
    prepare = prepare_args(argv, args.corpus)
    ws = Workspace(args.root or data_root(RECIPE, prepare), args, RECIPE)
    sources = test_sources(args.corpus, args.src)
    extra = {"corpus": str(args.corpus), **({"sources": {"test": "raw/test.source"}} if sources else {})}
    spec = Parallel(
        args.src, args.tgt, {"train": "train", "valid": "valid", "test": "test"}, tokenize="none", extra=extra
    )

    def write_raw(out: Path):
        copy_split_files(args.corpus, out, [f"{s}.{lang}" for s in spec.splits for lang in (args.src, args.tgt)])
        if sources:
            write_lines(out / "test.source", sources)

    run_pipeline(ws, spec, write_raw)
    if args.config:
        args.config.parent.mkdir(parents=True, exist_ok=True)
        header = (
            f"# written by `mixer-prepare corpus`; its data is {shown(ws.root)}"
            + (" (mixer-run prepares its own copy: --root was given)" if args.root else "")
            + "\n# no jobs/threads: mixer-run runs as many runs at a time as the machine has cores for\n"
        )
        args.config.write_text(
            header + yaml.safe_dump(experiment_file(args, prepare), sort_keys=False), encoding="utf-8"
        )
        print(f"wrote {args.config}: run it with `mixer-run {args.config}`")


if __name__ == "__main__":
    main_wrapper(RECIPE, lambda: main(sys.argv[1:]))
