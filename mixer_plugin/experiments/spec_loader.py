"""Experiment files read and checked into the schema of :mod:`.spec`: which models, on which
data, for how long, with which seeds, scored how.  One YAML file per experiment
(``experiments/*.yaml``, ``configs/<paper>/*.yaml``)::

    name: quickstart                  # work/<name>/; results/<name>.md unless results: says otherwise
    title: Transformer vs multiNN on the bundled Debian EN-DE corpus
    setting: 2+2 layers, d=256, 105k pairs   # what its verdicts hold for, said beside them (optional)
    data: debian_en_de                # a data recipe (mixer-prepare --list)
    prepare: --vocab 8000             # more arguments for it (optional)
    task: --truncate-source           # task flags that training and decoding both need (optional)
    train: --share-all-embeddings --optimizer adam --lr 0.001 ...   # fairseq-train flags of every model
    generate: {subset: test, average_last: 5, flags: --beam 4 --max-len-a 1.2 --max-len-b 10}
    score: {metrics: [bleu, chrf], baseline: transformer, by_source: true}
    seeds: [1]
    jobs: 2                           # runs at a time ...
    threads: 1                        # ... with this many threads each (neither: every core of the machine)
    cluster: {executor: slurm, partition: gpu, gpus_per_run: 1, time_limit: 4h}   # where the runs go (optional)
    speed:                            # the speed columns from idle-machine benchmarks of every row (optional)
      train: results/bench/bench_train_cpu.json  # mixer-bench train <this file>
      decode: results/bench/bench_decode_<name>_cpu.json  # mixer-bench decode DATA --experiment <this file>
    models:
      transformer: {arch: mixer_small_attn}
      multinn:
        arch: mixer_small_attn
        train: --encoder-mixers ngram:global=1 --decoder-mixers ngram   # appended
        seeds: [1, 2, 3]
      transformer_decoded_hard:       # another model's checkpoints, decoded differently
        decode_of: transformer
        overrides: {decoder_mixers: hard, decoder_cross_mixers: hard}

A model may take its row from another experiment file, ``from: leaderboard.yaml`` (its
folder's file; the model of the same name there gives ``arch``, ``train``, ``decode_of``,
``overrides``, ``paper``, ``paper_rows``, ``note`` and ``claims``, and keys set here win), so
that one row runs under two protocols and is written once.
A model may also set ``data``, ``prepare``, ``generate``, ``score``, ``paper`` (what the
paper says of that row, in words), ``paper_rows`` (the rows of the papers' tables it is
compared with, ``ARCH`` or ``ARCH:TABLE`` of ``models/architectures``, or ``ARCH@DATASET`` for
a paper's row on a dataset its arch does not list: their figures are shown beside ``paper``,
read from the paper's module and never typed here), ``note`` and ``claims``: the paper's
orderings for that row, each ``"> other on TASK"``, ``"< other on TASK"`` or ``"~ other on
TASK"`` (better than, worse than, about equal to another model of the file, as the paper claimed
it on TASK: translation, summarization or classification), which the results judge
(``claims.verdict``) where the table measures that task, and report unjudged elsewhere.  Flags are a string
(split as a shell would) or a list.  ``kind: classification`` trains
``--task sentence_prediction`` models and scores test accuracy with fairseq-validate.
``carries: {from: FILE, rows: [ROW, ...]}`` counts FILE's finished runs of those rows as this
file's where they are the same run with a larger cap (``archive.carried_at``);
``beside: {from: FILE, rows: {ROW: THEIR_ROW}}`` names the file this one is read beside, one
setting apart, each row beside its namesake there or the row ``rows`` names (``depth``).
``choose: [a, b, c]`` names models decoded on a validation subset, in order of added
regularisation: the results file applies the recipe rule (``claims.choose_in_order``) to them.
Every unknown key is an error that names the file and the key.
"""

import re
import shlex
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Union

import yaml

from .claims import TASKS
from .executors import FLAGS, checked
from .paper_refs import paper_figures
from .spec import KINDS, METRICS, Beside, Carries, Claim, Cluster, Experiment, ExperimentError, Generate, Model, Score


def flag_list(value: Any, where: str) -> List[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return shlex.split(value)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v) for v in value]
    raise ExperimentError(f"{where}: flags must be a string or a list of strings")


def _check_keys(d: Any, allowed: Iterable[str], where: str) -> None:
    if not isinstance(d, dict):
        raise ExperimentError(f"{where}: expected a mapping")
    unknown = sorted(set(d) - set(allowed))
    if unknown:
        raise ExperimentError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(allowed))})")


def _sub(cls: type, d: Any, base: Union[Generate, Score], where: str):
    """A Generate / Score from a mapping, over ``base``."""
    if d is None:
        return base
    names = {f.name for f in fields(cls)}
    _check_keys(d, names, where)
    values = dict(d)
    if "flags" in values:
        values["flags"] = flag_list(values["flags"], f"{where}.flags")
    if "metrics" in values:
        metrics = values["metrics"]
        metrics = [metrics] if isinstance(metrics, str) else metrics
        bad = [m for m in metrics if m not in METRICS]
        if bad:
            raise ExperimentError(f"{where}.metrics: unknown metric {bad[0]!r} (known: {', '.join(METRICS)})")
        values["metrics"] = list(metrics)
    if "checkpoint" in values and values["checkpoint"] not in ("last", "best"):
        raise ExperimentError(f"{where}.checkpoint: expected last or best, not {values['checkpoint']!r}")
    if "noise_floor" in values and (not isinstance(values["noise_floor"], (int, float)) or values["noise_floor"] < 0):
        raise ExperimentError(f"{where}.noise_floor: expected a number of points >= 0")
    return replace(base, **values)


def _seeds(value: Any, where: str) -> List[int]:
    seeds = [value] if isinstance(value, int) else value
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise ExperimentError(f"{where}: seeds must be an integer or a non-empty list of integers")
    return seeds


TOP = {
    "name",
    "title",
    "description",
    "kind",
    "data",
    "prepare",
    "task",
    "train",
    "generate",
    "score",
    "seeds",
    "models",
    "results",
    "jobs",
    "threads",
    "samples",
    "speed",
    "choose",
    "cluster",
    "carries",
    "beside",
    "setting",
}
SPEED = {"train": "mixer-bench train", "decode": "mixer-bench decode --experiment"}  # what writes each JSON
MODEL = {
    "arch",
    "train",
    "seeds",
    "data",
    "prepare",
    "generate",
    "score",
    "decode_of",
    "overrides",
    "paper",
    "paper_rows",
    "note",
    "claims",
    "from",
}
# what a model takes from the row of the same name in another experiment file (``from:``): the
# row itself, not the protocol it ran under (seeds, data, decoding and scoring stay this file's)
ROW = ("arch", "train", "decode_of", "overrides", "paper", "paper_rows", "note", "claims")
_CLAIM = re.compile(r"^\s*([<>~≈])\s*(\S+)\s+on\s+(\S+)\s*$")


def _claims(value: Any, where: str) -> List[Claim]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(c, str) for c in items):
        raise ExperimentError(
            f"{where}: claims must be a string or a list of strings such as '> transformer on translation'"
        )
    out = []
    for c in items:
        m = _CLAIM.match(c)
        if not m or m.group(3) not in TASKS:
            raise ExperimentError(
                f"{where}: {c!r} is not '<relation> <model> on <the paper's task>' "
                f"(relation: >, < or ~; task: {', '.join(TASKS)})"
            )
        out.append(Claim("~" if m.group(1) == "≈" else m.group(1), m.group(2), m.group(3)))
    return out


def _paper_rows(value: Any, where: str) -> List[str]:
    refs = [value] if isinstance(value, str) else value
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise ExperimentError(f"{where}: expected a list of ARCH, ARCH:TABLE or ARCH@DATASET")
    for ref in refs:
        try:
            paper_figures(ref)
        except ValueError as e:
            raise ExperimentError(f"{where}: {e}") from None
    return list(refs)


def _choose(value: Any, models: Dict[str, "Model"], kind: str, where: str) -> List[str]:
    """``choose``: two or more models of the file, in order; every one decoded on a
    validation subset, since a recipe is chosen on validation data only (docs/leaderboard.md)."""
    if not isinstance(value, list) or any(not isinstance(v, str) for v in value):
        raise ExperimentError(f"{where}: expected a list of model names, in order")
    if not value:
        return []
    if len(value) < 2 or len(set(value)) < len(value):
        raise ExperimentError(f"{where}: expected two or more different models, in order")
    for name in value:
        if name not in models:
            raise ExperimentError(f"{where}: {name!r} is not a model of this file")
        if kind == "classification" or models[name].generate.subset == "test":
            raise ExperimentError(
                f"{where}: {name!r} is scored on the test set; a choice is made on validation data only "
                "(generate: {subset: valid})"
            )
    return value


def row_from(path: Path, other: str, name: str, where: str) -> Dict[str, Any]:
    """The ``ROW`` keys of model ``name`` in experiment file ``other`` (relative to ``path``'s
    folder): one row defined once and run under two protocols (the converged leaderboard takes
    its rows from the 3,750-update one)."""
    source = path.parent / other
    try:
        models = yaml.safe_load(source.read_text(encoding="utf-8"))["models"]
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        raise ExperimentError(f"{where}: {other} is not an experiment file with models") from None
    if name not in models:
        raise ExperimentError(f"{where}: {other} has no model {name!r}")
    return {k: v for k, v in (models[name] or {}).items() if k in ROW}


def _file_beside(raw: Any, path: Path, where: str) -> Any:
    """What ``carries:`` and ``beside:`` share, ``{from: FILE, rows: ...}`` with FILE an experiment
    file beside this one: checked, and its ``rows`` returned for the caller's own checks."""
    _check_keys(raw, {"from", "rows"}, where)
    other = raw.get("from")
    if not isinstance(other, str) or not (path.parent / other).is_file():
        raise ExperimentError(f"{where}.from: no experiment file {other!r} beside this one")
    return raw.get("rows")


def _own_rows(rows: Iterable[str], models: Dict[str, Model], where: str) -> None:
    unknown = [r for r in rows if r not in models]
    if unknown:
        raise ExperimentError(f"{where}.rows: no model {unknown[0]!r} in this file")


def _carries(raw: Any, path: Path, models: Dict[str, Model], where: str) -> Optional[Carries]:
    """``carries: {from: FILE, rows: [ROW, ...]}``: an experiment file beside this one, and rows of this one."""
    if raw is None:
        return None
    rows = _file_beside(raw, path, where)
    if not isinstance(rows, list) or not rows or not all(isinstance(r, str) for r in rows):
        raise ExperimentError(f"{where}.rows: a list of this file's rows")
    _own_rows(rows, models, where)
    return Carries(Path(raw["from"]), rows)


def _beside(raw: Any, path: Path, models: Dict[str, Model], where: str) -> Optional[Beside]:
    """``beside: {from: FILE, rows: {ROW: THEIR_ROW, ...}}``: an experiment file beside this one,
    and the rows of this one that stand beside a row of another name there."""
    if raw is None:
        return None
    rows = _file_beside(raw, path, where) or {}
    if not isinstance(rows, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in rows.items()):
        raise ExperimentError(f"{where}.rows: a mapping of this file's rows to that file's")
    _own_rows(rows, models, where)
    return Beside(Path(raw["from"]), dict(rows))


def load(path: Union[str, Path]) -> Experiment:
    path = Path(path)
    if not path.is_file():
        raise ExperimentError(f"{path}: no such experiment file")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ExperimentError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from None
    return from_mapping(raw, path)


def from_mapping(raw: Any, path: Path) -> Experiment:
    """An experiment file's contents (``raw``, as YAML reads it) checked into the schema; ``path``
    names the file in errors and is where ``from:`` looks (``paper_rows`` builds its files in memory)."""
    _check_keys(raw, TOP, str(path))
    where = lambda key: f"{path}: {key}"  # noqa: E731
    for key in ("name", "data", "models"):
        if key not in raw:
            raise ExperimentError(where(key) + " is required")
    kind = raw.get("kind", "translation")
    if kind not in KINDS:
        raise ExperimentError(where("kind") + f" must be one of {', '.join(KINDS)}")
    default_score = Score(metrics=["accuracy"]) if kind == "classification" else Score()
    default_generate = Generate(checkpoint="best") if kind == "classification" else Generate()
    generate = _sub(Generate, raw.get("generate"), default_generate, where("generate"))
    score = _sub(Score, raw.get("score"), default_score, where("score"))
    seeds = _seeds(raw.get("seeds", [1]), where("seeds"))
    if not isinstance(raw["models"], dict) or not raw["models"]:
        raise ExperimentError(where("models") + " must map model names to their settings")
    models = {}
    for name, m in raw["models"].items():
        w = f"models.{name}"
        m = m or {}
        _check_keys(m, MODEL, where(w))
        if "from" in m:
            m = {**row_from(path, str(m["from"]), name, where(w + ".from")), **m}
        if ("arch" in m) == ("decode_of" in m):
            raise ExperimentError(
                where(w) + ": give either arch (a model to train) or decode_of (another model's checkpoints)"
            )
        if "overrides" in m and not isinstance(m["overrides"], dict):
            raise ExperimentError(where(w + ".overrides") + ": expected a mapping of model options")
        models[name] = Model(
            name=name,
            arch=m.get("arch"),
            train=flag_list(m.get("train"), where(w + ".train")),
            seeds=_seeds(m["seeds"], where(w + ".seeds")) if "seeds" in m else seeds,
            data=m.get("data", raw["data"]),
            prepare=flag_list(m.get("prepare", raw.get("prepare")), where(w + ".prepare")),
            generate=_sub(Generate, m.get("generate"), generate, where(w + ".generate")),
            score=_sub(Score, m.get("score"), score, where(w + ".score")),
            decode_of=m.get("decode_of"),
            overrides=m.get("overrides", {}),
            paper=str(m.get("paper", "")),
            paper_rows=_paper_rows(m.get("paper_rows", []), where(w + ".paper_rows")),
            note=str(m.get("note", "")),
            claims=_claims(m.get("claims", []), where(w + ".claims")),
            source=str(m.get("from", "")),
        )
    for name, m in models.items():
        if m.decode_of is not None:
            src = models.get(m.decode_of)
            if src is None or src.decode_of is not None:
                raise ExperimentError(
                    where(f"models.{name}.decode_of") + f": {m.decode_of!r} is not a trained model of this file"
                )
            if not set(m.seeds) <= set(src.seeds):
                raise ExperimentError(
                    where(f"models.{name}.seeds") + f": {m.decode_of} has no seed "
                    f"{sorted(set(m.seeds) - set(src.seeds))[0]}"
                )
        for c in m.claims:
            if c.other not in models or c.other == name:
                raise ExperimentError(
                    where(f"models.{name}.claims") + f": {c.other!r} is not another model of this file"
                )
            if kind == "classification":
                raise ExperimentError(
                    where(f"models.{name}.claims") + ": claims are judged by paired bootstrap, "
                    "which classification experiments do not run"
                )
        if m.score.baseline is not None and m.score.baseline not in models:
            raise ExperimentError(where("score.baseline") + f": {m.score.baseline!r} is not a model of this file")
    for key in ("jobs", "threads", "samples"):
        if key in raw and (not isinstance(raw[key], int) or raw[key] < (0 if key == "samples" else 1)):
            raise ExperimentError(where(key) + " must be a positive integer")
    speed = raw.get("speed") or {}
    _check_keys(speed, SPEED, where("speed"))
    for key, value in speed.items():
        if not isinstance(value, str) or not value.endswith(".json"):
            raise ExperimentError(where(f"speed.{key}") + f": expected the path of a {SPEED[key]} JSON file")
    choose = _choose(raw.get("choose", []), models, kind, where("choose"))
    cluster = raw.get("cluster") or {}
    _check_keys(cluster, FLAGS, where("cluster"))
    cluster = checked(replace(Cluster(), **cluster), lambda key: where(f"cluster.{key}"))
    results = raw.get("results")
    carries = _carries(raw.get("carries"), path, models, where("carries"))
    beside = _beside(raw.get("beside"), path, models, where("beside"))
    return Experiment(
        name=str(raw["name"]),
        path=path,
        title=str(raw.get("title", raw["name"])),
        description=str(raw.get("description", "")).strip(),
        kind=kind,
        task=flag_list(raw.get("task"), where("task")),
        train=flag_list(raw.get("train"), where("train")),
        models=models,
        results=Path(results) if results else None,
        jobs=raw.get("jobs"),
        threads=raw.get("threads"),
        samples=raw.get("samples", 0),
        speed={k: Path(v) for k, v in speed.items()},
        choose=choose,
        cluster=cluster,
        carries=carries,
        beside=beside,
        setting=str(raw.get("setting", "")),
    )
