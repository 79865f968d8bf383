"""The depth study's pilot on the protocol page, in two generated blocks, so that the width and
the budget the protocol chooses are read from measurements and typed nowhere:

- ``speed_table``: the training speed of each of its rows at 2+2 and 6+6 layers and each width
  tried, in fp32 and in bf16 (``mixer-bench train experiments/depth_pilot.yaml``, one results
  file per precision), and the hours a run of ``PLANNED`` updates takes at that speed;
- ``peak_lines``: where each pilot training on the validation set (``experiments/
  depth_pilot_peak.yaml``) peaked, whether its rule or its cap ended it, and its hours by the
  clock, validations in."""

import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from ..paths import CHECKOUT
from .archive import kept_records
from .argv import flag_value
from .collect import peak, selection, train_flags
from .progress import fmt
from .record import RunRecord
from .spec import Experiment
from .spec_loader import load

PRECISIONS = ("fp32", "bf16")
PILOT = "results/bench/bench_train_depth_pilot_{}_cpu.json"  # the benchmark's files, by precision
ROW = re.compile(r"^(?P<row>\w+?)_(?P<layers>\d+)x(?P=layers)_d(?P<d>\d+)$")  # transformer_6x6_d192
PEAKS = "experiments/depth_pilot_peak.yaml"  # the pilot's trainings to a peak, validation only
PLANNED = 10_000  # updates of the hours column: a 6+6 run's peak and the rule's 2,000 are about that


def measured(root: Path = CHECKOUT) -> Dict[str, dict]:
    """precision -> its benchmark record, for the precisions measured so far."""
    out = {}
    for precision in PRECISIONS:
        path = root / PILOT.format(precision)
        if path.is_file():
            out[precision] = json.loads(path.read_text(encoding="utf-8"))
    return out


def speeds(runs: Dict[str, dict]) -> Dict[tuple, Dict[str, float]]:
    """(d, layers, row) -> precision -> updates/s, from each precision's benchmark record."""
    out: Dict[tuple, Dict[str, float]] = {}
    for precision, record in runs.items():
        for r in record["rows"]:
            m = ROW.match(r["model"])
            if m and r.get("ups"):
                out.setdefault((int(m["d"]), int(m["layers"]), m["row"]), {})[precision] = r["ups"]
    return out


def validation_every(exp: Experiment, name: str) -> int:
    """Updates between a pilot training's validations (fairseq validates at each mid-epoch save)."""
    return int(flag_value(train_flags(exp, exp.models[name]), "--save-interval-updates"))


def speed_table(root: Path = CHECKOUT) -> str:
    """The pilot's speeds as a table, its rows grouped by width, then depth, then mixer."""
    runs = measured(root)
    if not runs:
        return "Not measured yet (`mixer-bench train experiments/depth_pilot.yaml`)."
    ups = speeds(runs)
    order: Dict[str, int] = {}  # the mixers in the experiment file's order
    for r in next(iter(runs.values()))["rows"]:
        order.setdefault(r["model"].split("_")[0], len(order))
    head = ["row", "layers", "d", *(f"{p} updates/s" for p in runs), "bf16 ÷ fp32"]
    head.append(f"hours for {PLANNED:,} updates, the faster precision")
    lines: List[str] = ["| " + " | ".join(head) + " |", "|---|---:|---:|" + "---:|" * (len(head) - 3)]
    for (d, layers, row), speed in sorted(ups.items(), key=lambda kv: (-kv[0][0], kv[0][1], order[kv[0][2]])):
        ratio = f"{speed['bf16'] / speed['fp32']:.2f}x" if {"fp32", "bf16"} <= set(speed) else ""
        hours = PLANNED / max(speed.values()) / 3600
        cells = [f"`{row}`", f"{layers}+{layers}", str(d), *(f"{speed[p]:.2f}" if p in speed else "" for p in runs)]
        lines.append("| " + " | ".join([*cells, ratio, f"{hours:.1f}"]) + " |")
    said = "; ".join(
        f"{p}: {rec['meta'].get('cpu', '?')}, {rec['meta']['date']}, {rec['meta']['updates']} updates a row, "
        f"load average {rec['meta']['load_start']} at its start"
        for p, rec in runs.items()
    )
    return "\n".join(
        [
            *lines,
            "",
            f"Measured by `mixer-bench train experiments/depth_pilot.yaml` ({said}); fairseq's own updates/s "
            "over the logged intervals after the first, start-up and validation out. Files: "
            + ", ".join(f"`{PILOT.format(p)}`" for p in runs)
            + ".",
        ]
    )


def peak_lines(root: Path = CHECKOUT) -> str:
    """One line per finished pilot training of ``PEAKS``: its peak on the metric its checkpoints
    are chosen by, what ended it (its rule, or its cap while still improving), and its hours."""
    exp = load(root / PEAKS)
    records = kept_records(exp)
    if not records:
        return f"Not finished yet (`mixer-run {PEAKS}`)."
    lines, bench = [], bench_speeds(root)
    for name, runs in records.items():
        chosen = selection(exp, exp.models[name])
        every = validation_every(exp, name)
        for record in runs:
            top = peak(record, chosen)
            # fairseq's clock since the training's (last) start: validations and saving in
            wall = max((p["wall"] for p in record.train if "wall" in p), default=None)
            if top is None or wall is None:
                continue
            ended = (
                f"its rule ended it at update {top.stopped:,}"
                if top.stopped
                else f"its cap ended it at update {record.last_update:,}, {record.last_update - top.update:,} "
                f"updates after the peak, fewer than the rule's {chosen.patience * every:,}: still improving"
            )
            lines.append(
                f"- `{name}` (seed {record.seed}, {record.params or 0:,} parameters): valid {chosen.metric} "
                f"(greedy) peaked at update {top.update:,} at {top.value:.2f}; {ended}. "
                f"{wall / 3600:.2f} h by the clock to its last update, validations in "
                f"({record.last_update / wall:.2f} updates/s).{against_bench(record, bench.get(name))}"
            )
    return "\n".join(lines) + f"\n\nFrom the committed records of `{PEAKS}` (`results/{exp.name}/runs/`)."


def bench_speeds(root: Path) -> Dict[str, float]:
    """A pilot row's name (``transformer_6x6_d128``) -> its fp32 speed in the benchmark."""
    return {f"{row}_{n}x{n}_d{d}": by["fp32"] for (d, n, row), by in speeds(measured(root)).items() if "fp32" in by}


def against_bench(record: RunRecord, bench: Optional[float]) -> str:
    """A long training's own speed beside the benchmark's for its row: fairseq's median
    updates/s over its logged intervals (an interval with a validation reads low, the median
    leaves those out), which the benchmark's 60 updates may overstate."""
    median = median_ups(record)
    if median is None or bench is None:
        return ""
    return (
        f" fairseq's median updates/s over its logged intervals: {median:.2f}, against {bench:.2f} for this row in "
        f"the speed benchmark ({median / bench:.2f}x)."
    )


def median_ups(record: RunRecord) -> Optional[float]:
    ups = [p["ups"] for p in record.train if "ups" in p]
    return statistics.median(ups) if ups else None


# ------------------------------------------------------------ the rule (docs/leaderboard.md, version 4)
SESSION_S = 2 * 3600 + 15 * 60  # the training time a session grants one run (issue 96)
WIDTHS = (256, 192, 128)  # the widths the pilot measured, widest first: rule 1 takes the first that passes
DEEP = 6  # the depth whose slowest row sets what a session affords


def precision_at(d: int) -> str:
    """Rule 3: fp32 at d=128, bf16 (where the CPU has it) at a wider width."""
    return "fp32" if d == 128 else "bf16"


def validation_s(record: RunRecord) -> Optional[float]:
    """Seconds per validation (with its checkpoint's saving) of a pilot training: fairseq's clock
    less its training steps, up to its last logged interval, over the validations before it."""
    timed = [p for p in record.train if "wall" in p and "train_wall" in p]
    if not timed:
        return None
    last = timed[-1]
    n = sum(1 for v in record.valid if v["num_updates"] <= last["num_updates"])
    return (last["wall"] - sum(p["train_wall"] for p in timed)) / n if n else None


def affords(ups: float, valid_s: float, every: int) -> int:
    """The updates a run trains in ``SESSION_S`` at ``ups`` with a validation of ``valid_s`` every
    ``every`` updates, in whole stretches between validations."""
    return int(SESSION_S // (every / ups + valid_s)) * every


@dataclass(frozen=True)
class Rule:
    """Rules 1 and 2 read off the pilot: a line per width, the width chosen, and the equal
    update budget (None where rule 1 chose a width: its runs train to the stopping rule);
    ``valid_s`` and ``every``: the peak run's seconds a validation and updates between them."""

    lines: List[str]
    width: int
    budget: Optional[int]
    valid_s: float
    every: int
    ratio: Optional[float] = None  # the peak run's own speed over the benchmark's for its row


def rule(root: Path = CHECKOUT) -> Optional[Rule]:
    """Rules 1 and 2 applied to the pilot's measurements (None until its speeds and its peak
    run are committed): at each width, what the slowest 6+6 row trains in a session and the
    peak the 6+6 transformer would need; then the width chosen, or the equal update budget."""
    runs, exp = measured(root), load(root / PEAKS)
    records = kept_records(exp)
    if not runs or not records:
        return None
    name, (record, *_) = next(iter(records.items()))
    chosen = selection(exp, exp.models[name])
    every = validation_every(exp, name)
    patience = chosen.patience * every
    valid_s = validation_s(record)
    top = peak(record, chosen)
    d_peak = int(ROW.match(name)["d"])
    lines, passed = [], None
    for d in WIDTHS:
        precision = precision_at(d)
        found = slowest_deep(runs, d)
        if found is None:
            lines.append(f"- d={d}: no {precision} speeds measured.")
            continue
        slowest, ups = found
        n = affords(ups, valid_s, every)
        need = n - patience
        said = (
            f"- d={d} ({precision}): the slowest 6+6 row, `{slowest}`, at {ups:.2f} updates/s and "
            f"{valid_s:.0f} s a validation, trains {n:,} updates in a session's {fmt(SESSION_S)}; the 6+6 "
            f"transformer would have to peak by update {need:,}"
        )
        if d != d_peak:
            lines.append(f"{said}: not measured at this width, so it does not pass.")
        elif top.stopped is not None and top.stopped <= n:
            lines.append(
                f"{said}: it peaked at update {top.update:,} and its rule ended it at {top.stopped:,}: passes."
            )
            passed = passed or d
        else:
            ended = (
                f"its rule ended it at update {top.stopped:,}"
                if top.stopped is not None
                else f"its rule had not ended it by its cap, update {record.last_update:,}"
            )
            lines.append(f"{said}: {ended}, its best at update {top.update:,}: does not pass.")
    own, bench = median_ups(record), bench_speeds(root).get(name)
    ratio = own / bench if own and bench else None
    if passed:
        return Rule(lines, passed, None, valid_s, every, ratio)
    return Rule(lines, WIDTHS[-1], affords_at_narrowest(runs, valid_s, every), valid_s, every, ratio)


def rule_lines(root: Path = CHECKOUT) -> str:
    """The rule's arithmetic on the protocol page, a line per width, then its choice."""
    got = rule(root)
    if got is None:
        return "Waiting for the pilot's speeds and its peak run."
    if got.budget is None:
        verdict = f"Rule 1 chooses d={got.width}: both depths train to version 3's stopping rule."
    else:
        verdict = (
            f"No width passes rule 1. Rule 2: every row at both depths trains at d={got.width} "
            f"({precision_at(got.width)}) for {got.budget:,} updates, an equal update budget."
        )
    return "\n".join([*got.lines, "", verdict])


def slowest_deep(runs: Dict[str, dict], d: int) -> Optional[tuple]:
    """(row, updates/s) of the slowest 6+6 row at width ``d`` in rule 3's precision; None unmeasured."""
    precision = precision_at(d)
    found = {
        row: by[precision]
        for (w, layers, row), by in speeds(runs).items()
        if (w, layers) == (d, DEEP) and precision in by
    }
    return min(found.items(), key=lambda kv: kv[1]) if found else None


def affords_at_narrowest(runs: Dict[str, dict], valid_s: float, every: int) -> int:
    """Rule 2's budget: what the slowest 6+6 row at the narrowest width trains in a session,
    rounded down to a multiple of 1,000."""
    _, ups = slowest_deep(runs, WIDTHS[-1])
    return affords(ups, valid_s, every) // 1000 * 1000


# ------------------------------------------------------------ the recipe (experiments/depth_pilot_recipe.yaml)
RECIPE = "experiments/depth_pilot_recipe.yaml"
# the candidates in the rule's order, fewest changes from version 3's recipe first
RECIPES = ("postnorm_lr2e3", "postnorm_lr1e3", "prenorm_lr2e3")
DEPTHS = (2, 6)


def recipe_lines(root: Path = CHECKOUT) -> str:
    """The recipe pilot's table (valid BLEU of each recipe at each depth, and their mean) and the
    recipe its rule chooses: the first, in ``RECIPES``' order, whose mean is within the rerun floor
    of the best; until every run has finished, the runs still to come."""
    exp = load(root / RECIPE)
    scores = {name: runs[0].scores["bleu"] for name, runs in kept_records(exp).items()}
    lines = ["| recipe | " + " | ".join(f"{n}+{n} layers: valid BLEU" for n in DEPTHS) + " | mean |"]
    lines.append("|---|" + "---:|" * (len(DEPTHS) + 1))
    means = {}
    for recipe in RECIPES:
        got = [scores.get(f"{recipe}_{n}x{n}") for n in DEPTHS]
        if None not in got:
            means[recipe] = sum(got) / len(got)
        cells = ["–" if s is None else f"{s:.2f}" for s in got]
        cells.append(f"{means[recipe]:.2f}" if recipe in means else "–")
        lines.append(f"| `{recipe}` | " + " | ".join(cells) + " |")
    floor = next(iter(exp.models.values())).score.noise_floor
    if len(means) < len(RECIPES):
        said = f"Not every run has finished (`mixer-run {RECIPE}`): no recipe is chosen yet."
    else:
        best = max(means.values())
        chosen = next(r for r in RECIPES if means[r] >= best - floor)
        said = (
            f"Chosen: `{chosen}`, the first in the rule's order whose mean is within the rerun floor "
            f"({floor} BLEU) of the best ({best:.2f})."
        )
    source = f"From the committed records of `{RECIPE}` (`results/{exp.name}/runs/`): sacreBLEU of checkpoint_last.pt"
    return "\n".join([*lines, "", said, "", source + ", greedy, the whole validation set."])


# ------------------------------------------------------------ the study's cost (version 4's files)
STUDY = ("experiments/leaderboard_v4.yaml", "experiments/leaderboard_v4_deep.yaml")  # its 2+2 and 6+6 files
STAND_INS = ("transformer", "multinn")  # a row the pilot did not time counts at the slower of these


def cost_lines(root: Path = CHECKOUT) -> str:
    """The study's machine-hours at the pilot's speeds in rule 3's precision: each row's
    training at each depth (its updates at its pilot speed, a validation of the peak run's
    length every ``every`` updates), the runs the files plan (their seeds), and the most the
    seeds rule can add (seeds 2 and 3 of every other row).  Decoding and averaging are out."""
    got, runs = rule(root), measured(root)
    if got is None or got.budget is None:
        return "Waiting for the rule's equal update budget."
    ups = speeds(runs)
    precision = precision_at(got.width)
    head = "| row | " + " | ".join(f"{f.split('/')[1][:-5]}: hours a run" for f in STUDY) + " |"
    lines, planned, most = [head, "|---|" + "---:|" * len(STUDY)], 0.0, 0.0
    exps = [load(root / f) for f in STUDY]
    stood_in, slowest, runs_h = [], (0.0, "", ""), []
    for name in exps[0].models:
        cells = []
        for exp in exps:
            flags = train_flags(exp, exp.models[name])
            layers, d = (int(flag_value(flags, f)) for f in ("--encoder-layers", "--encoder-embed-dim"))
            if (d, layers, name) in ups:
                speed = ups[d, layers, name][precision]
            else:
                speed = min(ups[d, layers, row][precision] for row in STAND_INS)
                stood_in.append(name)
            hours = (got.budget / speed + got.budget // got.every * got.valid_s) / 3600
            planned += hours * len(exp.models[name].seeds)
            most += hours * max(3, len(exp.models[name].seeds))
            cells.append(f"{hours:.2f}")
            slowest = max(slowest, (hours, name, f"{layers}+{layers}"))
            runs_h += [hours] * len(exp.models[name].seeds)
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    said = ", ".join(f"`{n}`" for n in dict.fromkeys(stood_in))
    return "\n".join(
        [
            *lines,
            "",
            f"At {got.budget:,} updates and d={got.width} in {precision}, at the pilot's speeds (a row it did not "
            f"time, {said}, at the slower of `{'` and `'.join(STAND_INS)}` at its depth) with a validation of "
            f"{got.valid_s:.0f} s every {got.every} updates; decoding out. The runs the files plan (three seeds of "
            f"the transformer, one of every other row): {planned:.0f} machine-hours; with seeds 2 and 3 for every "
            f"other row, the most the seeds rule can ask: {most:.0f}.",
            *([slower(got, slowest, runs_h)] if got.ratio else []),
        ]
    )


def slower(got: Rule, slowest: tuple, runs_h: List[float]) -> str:
    """The cost again at the peak run's own speed, its ratio to the benchmark's applied to
    every row's training (validations as measured): the slowest run, and the planned runs
    (``runs_h``: each one's hours at the benchmark's speed)."""
    hours, name, depth = slowest
    valid_h = got.budget // got.every * got.valid_s / 3600
    at = lambda h: (h - valid_h) / got.ratio + valid_h  # noqa: E731  (training slower, validations not)
    return (
        f"\nAt the peak run's own speed, {got.ratio:.2f}x the benchmark's for its row (above), applied to every "
        f"row: the slowest run, `{name}` at {depth}, {at(hours):.2f} h; the planned runs "
        f"{sum(map(at, runs_h)):.0f} machine-hours."
    )
