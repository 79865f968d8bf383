"""Decoding speed over output length: every decoder mixer against the transformer at the
same size, through fairseq's own ``fairseq-generate``.

    mixer-bench decode DATA_BIN                      # -> results/bench/bench_decode_<device>.{md,json,png}
    mixer-bench decode DATA_BIN --lengths 30,100 --beams 4 --sentences 16 --rounds 1 --md /tmp/d.md
    mixer-bench decode DATA_BIN --device cuda --precision bf16   # -> results/bench/bench_decode_cuda_bf16.*
    mixer-bench decode DATA_BIN --experiment experiments/leaderboard.yaml --lengths 25 --beams 4
                                                     # -> results/bench/bench_decode_leaderboard_cpu.*

A benchmark, not a test.  The models are the transformer and every registered mixer that
can be a decoder's self-attention (a new mixer is timed without editing a list here), each
in its decoding spec (``DECODE_SPECS``), with the readings of ``EXTRA_MODELS`` beside it.
Each model is the CPU size (``mixer_small_attn``: 2+2 layers, d=256, 4 heads) with its
mixer in the decoder (self-attention, and cross-attention for the mixers that take it),
made by ``fairseq-train --max-update 1`` at a learning rate of 1e-9 on DATA_BIN: the
weights do not matter, because every hypothesis is pinned to exactly L tokens
(``--max-len-a 0 --max-len-b L --min-len L``), so every model does the same number of
decoder steps.  The speed is fairseq-generate's own figure (its timer around the
SequenceGenerator: loading and I/O are out); ms per step = sentences / (that figure) /
(L+1) for the one batch of ``--sentences`` sentences (fairseq's sentences/s comes from the
unrounded time; the seconds it prints beside it are rounded to 0.1 s).  Models run
round-robin, the order rotated every round; the median over rounds is reported with the
ratio to the transformer of the same run.

``--experiment FILE`` times the rows of an experiment file instead of the mixers above:
each row's own architecture and flags (``arch`` and ``train``, with the file's task flags
and ``--share-all-embeddings`` where its training shares them), and a row that decodes
another row's checkpoints (``decode_of``) with that checkpoint and its ``--model-overrides``.
The speed-up is against the file's baseline row.  This is the decoding column of the
leaderboard (``speed:`` in the experiment file): every row in one run on an idle machine,
where the decoding timed inside a campaign's runs depends on which other run shared the
machine, and on which machine a session had.

It runs under the allocator settings ``mixer-run`` gives fairseq-generate (``mixer-bench``
starts itself again with them when they are not set), so it measures what the runner runs.

A windowed decoder (``ngram``, ``local``, ``multiscale`` with fixed scales: every mixer
whose decoder state is bounded, ``bounded_state``) keeps O(n) state per layer, where
attention keeps O(L): its advantage should grow with L.  For hard retrieval, one decoding
step of the transformer is profiled (forward hooks on its attention modules): the share of
the step in attention, s, bounds what replacing attention can gain at 1 / (1 - s); hard's
measured speed-up is given as a share of that.
"""

import argparse
import datetime
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import List, Optional

from ..experiments.commands import PRECISIONS
from .decode_args import add_common_args, check_data, checked_labels
from .decode_models import MODELS, experiment_rows, make_checkpoint, mixer_rows
from .decode_report import markdown, plot
from .decode_timing import generate
from .result_files import RESULTS, write_outputs
from .run_record import command_line, cpu_label


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(
        prog="mixer-bench decode", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_args(ap)
    ap.add_argument("--lengths", default="30,100,300", help="output lengths L")
    ap.add_argument("--beams", default="4,1")
    ap.add_argument("--sentences", type=int, default=32, help="sentences decoded per run (one batch)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--mixers", default=",".join(MODELS), help=f"of {', '.join(MODELS)}")
    ap.add_argument("--experiment", help="time the rows of this experiment file instead of --mixers")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument(
        "--precision",
        choices=list(PRECISIONS),
        default="fp32",
        help="fairseq-generate's precision (fp16 and bf16 on a GPU only)",
    )
    ap.add_argument(
        "--checkpoints",
        help="a folder to keep the models' checkpoints in and reuse them from (default: a temporary one)",
    )
    args = ap.parse_args(argv)
    if args.experiment:
        if args.mixers != ap.get_default("mixers"):
            raise SystemExit(f"{ap.prog}: error: --mixers and --experiment exclude each other")
        check_data(args, ap.prog)
        models, described = experiment_rows(args.experiment, ap.prog)
    else:
        models = mixer_rows(checked_labels(args, ap.prog, transformer_first=True))
        described = "`mixer_small_attn` (2+2 layers, d=256, 4 heads) with its mixer in the decoder"
    labels = list(models)
    base = labels[0]
    if args.device == "cpu" and args.precision != "fp32":
        raise SystemExit(
            f"{ap.prog}: error: --precision {args.precision} needs --device cuda (fairseq's --fp16/--bf16 assert a GPU)"
        )
    lengths = [int(x) for x in args.lengths.split(",")]
    beams = [int(x) for x in args.beams.split(",")]
    langs = (args.source_lang, args.target_lang)
    import torch

    t0, load_start = time.time(), " ".join(f"{v:.2f}" for v in os.getloadavg())
    where = {"device": args.device, "precision": args.precision}
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"{ap.prog}: error: --device cuda but torch.cuda.is_available() is False")
    with tempfile.TemporaryDirectory() as tmp:
        keep = Path(args.checkpoints) if args.checkpoints else Path(tmp)
        ckpts = {}
        for label in sorted(labels, key=lambda lab: models[lab].train is None):  # what a decode_of row reads first
            row = models[label]
            ckpts[label] = (
                ckpts[row.source]
                if row.train is None
                else make_checkpoint(args.data, row.train, keep / label, langs, args.device)
            )
            generate(
                args.data, ckpts[label], lengths[0], beams[0], args.sentences, langs, **where, extra=row.generate
            )  # warm-up
            print(f"checkpoint {label}: {ckpts[label]}", flush=True)
        runs = {(lab, L, b): [] for lab in labels for L in lengths for b in beams}
        profile = {}
        for L in lengths:
            for b in beams:
                profile[(L, b)] = generate(
                    args.data,
                    ckpts[base],
                    L,
                    b,
                    args.sentences,
                    langs,
                    profile=True,
                    **where,
                    extra=models[base].generate,
                )
                for r in range(args.rounds):
                    k = r % len(labels)
                    for label in labels[k:] + labels[:k]:  # rotate the order each round
                        res = generate(
                            args.data, ckpts[label], L, b, args.sentences, langs, **where, extra=models[label].generate
                        )
                        runs[(label, L, b)].append(res)
                        print(
                            f"L={L:4d} beam {b} round {r + 1} {label:14s} {res['sent_per_s']:8.2f} sent/s "
                            f"{res['ms_per_step']:7.1f} ms/step",
                            flush=True,
                        )
    rows = []
    for (label, L, b), res in runs.items():
        speed = statistics.median(x["sent_per_s"] for x in res)
        base_speed = statistics.median(x["sent_per_s"] for x in runs[(base, L, b)])
        share = profile[(L, b)]["attention_share"]
        rows.append(
            {
                "model": label,
                "L": L,
                "beam": b,
                "sent_per_s": speed,
                "ms_per_step": statistics.median(x["ms_per_step"] for x in res),
                "speedup": speed / base_speed,
                "rounds": [x["sent_per_s"] for x in res],
                "transformer_attention_share": share,
                "ceiling": 1 / (1 - share),
            }
        )
    meta = {
        "command": command_line(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": (cpu_label() if args.device == "cpu" else f"{torch.cuda.get_device_name()}, {args.precision}"),
        "precision": args.precision,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "load_start": load_start,
        "load_end": " ".join(f"{v:.2f}" for v in os.getloadavg()),
        "wall_s": time.time() - t0,
        "sentences": args.sentences,
        "rounds": args.rounds,
        "baseline": base,
        "models": described,
        "experiment": args.experiment,
    }
    md = markdown(meta, rows, labels, lengths, beams, profile)
    stem = "bench_decode" + (f"_{Path(args.experiment).stem}" if args.experiment else "")
    stem += "_cpu" if args.device == "cpu" else f"_cuda_{args.precision}"
    out_md = args.md or str(RESULTS / f"{stem}.md")
    out_json = args.json or str(Path(out_md).with_suffix(".json"))
    if len(lengths) > 1:  # a plot over L
        plot(rows, labels, beams, Path(out_md).with_suffix(".png"), meta["device"])
    write_outputs(
        out_md, out_json, md, {"meta": meta, "rows": rows, "profile": {f"{L},{b}": v for (L, b), v in profile.items()}}
    )


if __name__ == "__main__":
    main()
