"""The arithmetic of one training update of whole models: torch's FLOP counter over the
forward and backward of fairseq's criterion, on the experiment's own first training batches
(its data, its --max-tokens, its seed), for every model of an experiment file.

    mixer-bench flops experiments/leaderboard_v3.yaml --only transformer,multinn
    # -> results/bench/bench_flops_leaderboard_v3.{md,json}

Counted, not timed: it runs on any machine, and nothing else on the machine changes it.  It
counts what torch's FLOP counter counts (matrix products, convolutions, attention kernels:
two FLOPs a multiply-add), not element-wise work or the optimizer's step, so it is the
arithmetic a GPU's tensor cores would do.  docs/leaderboard.md reads it to say what a FLOP
count can and cannot price (``gpu_cost``).
"""

import argparse
import dataclasses
import datetime
import statistics
from pathlib import Path
from typing import List, Optional

import torch
from torch.utils.flop_counter import FlopCounterMode

from ..data.workspace import data_root
from ..experiments.commands import train_command
from ..experiments.spec_loader import load
from .result_files import RESULTS, write_outputs
from .run_record import command_line


@dataclasses.dataclass(frozen=True)
class UpdateFlops:
    """One model's count: its size, and the mean over ``batches`` training batches of the
    positions an update computes (its batch's sentences x their padded length, the shape the
    products run over) and the FLOPs it takes (forward and backward)."""

    model: str
    layers: str  # "2+2"
    params: int
    batches: int
    source_positions: float
    target_positions: float
    gflops: float


def count(argv: List[str], batches: int) -> UpdateFlops:
    """The count for one fairseq-train command line (its flags, without the program): the
    task, model and criterion built as fairseq-train builds them, its batches as it batches
    them (first epoch, its seed)."""
    from fairseq import options, tasks, utils

    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    utils.set_torch_seed(args.seed)
    task = tasks.setup_task(args)
    task.load_dataset("train")
    model, criterion = task.build_model(args), task.build_criterion(args)
    model.train()
    epoch = task.get_batch_iterator(
        dataset=task.dataset("train"),
        max_tokens=args.max_tokens,
        max_sentences=args.batch_size,
        max_positions=utils.resolve_max_positions(task.max_positions(), model.max_positions()),
        ignore_invalid_inputs=True,
        required_batch_size_multiple=args.required_batch_size_multiple,
        seed=args.seed,
    ).next_epoch_itr(shuffle=True)
    flops, source, target = [], [], []
    for _, sample in zip(range(batches), epoch):
        with FlopCounterMode(display=False) as counter:
            loss, _, _ = criterion(model, sample)
            loss.backward()
        model.zero_grad()
        flops.append(counter.get_total_flops())
        source.append(sample["net_input"]["src_tokens"].numel())  # (B, S), padding in
        target.append(sample["target"].numel())  # (B, T)
    return UpdateFlops(
        model="",
        layers=f"{args.encoder_layers}+{args.decoder_layers}",
        params=sum(p.numel() for p in model.parameters()),
        batches=len(flops),
        source_positions=statistics.mean(source),
        target_positions=statistics.mean(target),
        gflops=statistics.mean(flops) / 1e9,
    )


def markdown(exp_name: str, meta: dict, rows: List[UpdateFlops]) -> str:
    lines = [
        f"# FLOPs of one training update: {exp_name}",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; torch {meta['torch']}",
        f"- each model: torch's FLOP counter over the criterion's forward and backward on the first "
        f"{meta['batches']} training batches of its own command (its data, --max-tokens and seed), the mean; "
        "matrix products, convolutions and attention kernels only (two FLOPs a multiply-add), neither "
        "element-wise work nor the optimizer's step; positions: sentences x padded length, what the products "
        "run over",
        "",
        "| model | layers | parameters | source positions an update | target positions | GFLOP an update |",
        "|---|---|---:|---:|---:|---:|",
        *(
            f"| `{r.model}` | {r.layers} | {r.params:,} | {r.source_positions:,.0f} | {r.target_positions:,.0f} | "
            f"{r.gflops:.1f} |"
            for r in rows
        ),
    ]
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(
        prog="mixer-bench flops", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("experiment")
    ap.add_argument("--batches", type=int, default=4, help="training batches to average over")
    ap.add_argument("--only", help="comma-separated models")
    ap.add_argument("--md")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if args.batches < 1:
        ap.error(f"--batches: at least 1, not {args.batches}")
    exp = load(args.experiment)
    wanted = args.only.split(",") if args.only else None
    unknown = sorted(set(wanted or ()) - set(exp.models))
    if unknown:
        ap.error(f"--only: {', '.join(unknown)} not in {args.experiment}")
    rows = []
    for m in exp.models.values():
        if not m.arch or (wanted and m.name not in wanted):
            continue
        root = data_root(m.data, m.prepare)
        if not (root / "prep.json").is_file():
            raise SystemExit(f"mixer-bench flops: error: {root} is not prepared (run mixer-prepare {m.data} first)")
        argv_m = train_command(exp, m, 1, root, Path("/nonexistent"))  # nothing is saved
        flags = [str(a) for a in argv_m[argv_m.index("fairseq_cli.train") + 1 :]]
        got = count(flags, args.batches)
        rows.append(dataclasses.replace(got, model=m.name))
        print(f"{m.name:28s} {got.layers} {got.gflops:8.1f} GFLOP an update", flush=True)
    meta = {
        "command": command_line(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "torch": torch.__version__,
        "batches": args.batches,
        "experiment": str(exp.path),
    }
    out_md = args.md or str(RESULTS / f"bench_flops_{exp.name}.md")
    write_outputs(
        out_md,
        args.json or str(Path(out_md).with_suffix(".json")),
        markdown(exp.name, meta, rows),
        {"meta": meta, "rows": [dataclasses.asdict(r) for r in rows]},
    )


if __name__ == "__main__":
    main()
