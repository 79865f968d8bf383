"""Fault injection for ``mixer-run``, in the spirit of the storage engines' crash tests.

A *campaign* is one tiny experiment (the e2e corpus, a 32-wide transformer, 60 updates
of 12 an epoch with a checkpoint every 10, the last two averaged, beam 2 on 20 sentences, BLEU and chrF,
the results file committed into a git repository of its own) run to its end by a runner
that is killed again and again at chosen *points* and started again each time:

    prepare, train, average, generate, score   inside that stage (a random moment between
                                               its start line and its end, timed on an
                                               uninterrupted campaign; in train, after
                                               its first checkpoint)
    results                                    inside the results write (tables, plots,
                                               the copies of the run's outputs)
    commit                                     between ``git add`` and ``git commit``

After each kill every process the runner started must be gone within ``SURVIVAL`` seconds,
and at the end the campaign's records must equal those of an uninterrupted one: the
hypotheses and the averaged model bit for bit, the scores, the validation curve, the
results table's row (less its speed columns), and the committed copies, with nothing
left uncommitted.  A ``train`` kill may also damage ``checkpoint_last.pt`` (truncate it,
as a kill during fairseq's copy of it does), which the next start must set aside.

The runner runs through ``drive`` below: the real ``mixer-run`` with a line on stdout when
the results write and each git command begin, and a few milliseconds' pause before each
file copy and git command, so that a random kill can land inside those short steps.
Nothing else of the runner changes.

    python tests/faults.py sweep --rounds 10 [--seed 1]    # the longer sweep, by hand
"""

import argparse
import json
import lzma
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import yaml

REPO = Path(__file__).resolve().parents[1]
POINTS = ("prepare", "train", "average", "generate", "score", "results", "commit")
STAGES = POINTS[:5]
SURVIVAL = 5.0  # seconds a killed runner's processes may take to go
PAUSE = 0.02  # seconds before each git command of a driven runner
# seconds before each file copy: a run's kept copy is its record and one copied file (its
# hypotheses), so the copy stands for the whole in-between of the results write
COPY_PAUSE = 0.1

TRAIN = (
    "--share-all-embeddings --optimizer adam --lr 0.001 --lr-scheduler inverse_sqrt --warmup-updates 4 "
    "--max-tokens 2000 --criterion label_smoothed_cross_entropy --label-smoothing 0.1 --no-epoch-checkpoints "
    "--save-interval-updates 10 --keep-interval-updates 2 --num-workers 0 --log-format simple --log-interval 1 "
    "--max-update 60 --encoder-embed-dim 32 --encoder-ffn-embed-dim 64 --encoder-attention-heads 4 "
    "--decoder-embed-dim 32 --decoder-ffn-embed-dim 64 --decoder-attention-heads 4"
)


# ------------------------------------------------------------------ the driver
def drive(argv: List[str]):
    """``mixer-run`` itself, made to announce and stretch its short steps (see above)."""
    import mixer_plugin.experiments.archive as archive
    import mixer_plugin.experiments.publish as publish
    import mixer_plugin.experiments.runner as runner
    import mixer_plugin.experiments.schedule as schedule

    write, git, copyfile, compress = schedule.Runner._write_results, publish.git, shutil.copyfile, lzma.compress

    def announced_write(self, commit=None):
        print("@results", flush=True)
        return write(self, commit)

    def announced_git(repo, *args):
        print(f"@git {args[0]}", flush=True)
        time.sleep(PAUSE)
        return git(repo, *args)

    def paused_copy(src, dst, **kw):
        time.sleep(COPY_PAUSE)
        return copyfile(src, dst, **kw)

    def paused_compress(data, *a, **kw):  # the kept hypotheses (hyp.txt.xz) are written compressed
        time.sleep(COPY_PAUSE)
        return compress(data, *a, **kw)

    schedule.Runner._write_results = announced_write
    publish.git = announced_git
    archive.shutil.copyfile = paused_copy  # (the shutil module: every copy the runner makes)
    archive.lzma.compress = paused_compress  # (and every file it keeps compressed)
    runner.main(argv)


# ------------------------------------------------------------- the processes
def processes() -> Dict[int, tuple]:
    """pid -> (parent pid, start time, command line) of every process (Linux /proc)."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":  # a zombie has ended
            continue
        out[int(d.name)] = (int(fields[1]), fields[19], cmd)
    return out


def tree(root: int, table: Dict[int, tuple]) -> Dict[int, tuple]:
    """``root``'s descendants in ``table`` (not root itself)."""
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, rec in table.items():
            if rec[0] == parent and pid not in found:
                found[pid] = rec
                frontier.append(pid)
    return found


def survivors(before: Dict[int, tuple], mark: str) -> List[str]:
    """The processes of ``before`` (same pid, same start) still running, and any process
    whose command line names ``mark`` (the campaign's folder: a child started after the
    snapshot)."""
    now = processes()
    return sorted(
        {
            rec[2][:160]
            for pid, rec in now.items()
            if (pid in before and before[pid][1] == rec[1]) or (mark in rec[2] and pid != os.getpid())
        }
    )


# ------------------------------------------------------------------ campaigns
@dataclass
class Kill:
    point: str
    after: float  # seconds after the point began
    signal: str
    damaged: bool = False  # checkpoint_last.pt truncated after the kill
    landed: str = ""  # what the campaign's state says of where it landed
    survivors: List[str] = field(default_factory=list)
    seconds_to_go: float = 0.0


class Campaign:
    def __init__(self, folder: Path, corpus: Path):
        self.folder = folder
        self.work = folder / "work"
        self.repo = folder / "repo"  # where the results are committed
        self.exp = folder / "faults.yaml"
        self.repo.mkdir(parents=True, exist_ok=True)
        spec = {
            "name": "faults",
            "title": "faults",
            "data": "debian_en_de",
            "prepare": f"--corpus {corpus} --vocab 400",
            "train": TRAIN,
            "generate": {"subset": "test", "average_last": 2, "flags": "--beam 2 --max-len-a 1.2 --max-len-b 5"},
            "score": {"metrics": ["bleu", "chrf"]},
            "jobs": 1,
            "threads": 1,
            "results": str(self.repo / "results" / "faults.md"),
            "models": {"transformer": {"arch": "mixer_small_attn", "seeds": [1]}},
        }
        self.exp.write_text(yaml.safe_dump(spec), encoding="utf-8")
        for args in (
            ["init", "-q"],
            ["config", "user.email", "faults@example.org"],
            ["config", "user.name", "faults"],
            ["commit", "-q", "--allow-empty", "-m", "start"],
        ):
            subprocess.run(["git", *args], cwd=self.repo, check=True, capture_output=True)
        self.run = self.work / "faults" / "transformer" / "seed1"
        self.log: List[str] = []  # every line the runners printed, timed

    def start(self, *args: str) -> subprocess.Popen:
        """The runner (``drive``) on the campaign, with ``--commit`` and ``args``."""
        env = dict(
            os.environ,
            MIXER_WORK=str(self.work),
            OMP_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
            PYTHONUNBUFFERED="1",
            PYTHONWARNINGS="ignore",
            CUDA_VISIBLE_DEVICES="",
        )
        return subprocess.Popen(
            [sys.executable, __file__, "drive", str(self.exp), "--commit", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )

    def lines(self, proc: subprocess.Popen):
        """(seconds since start, line) as the runner prints them."""
        t0 = time.monotonic()
        for line in proc.stdout:
            self.log.append(line.rstrip("\n"))
            yield time.monotonic() - t0, line

    def complete(self, timeout: float = 600) -> Dict[str, float]:
        """Run to the end, uninterrupted; the seconds each point took."""
        proc, began, took = self.start(), {}, {}
        for t, line in self.lines(proc):
            point = point_began(line)
            if point:
                began[point] = t
            point = point_ended(line)
            if point and point in began:
                took.setdefault(point, t - began[point])
        code = proc.wait(timeout)
        if code != 0:
            raise AssertionError(f"runner exit {code}:\n" + "\n".join(self.log[-40:]))
        if "train" in took:  # a train kill waits for the first checkpoint: what is left after it
            stamps = re.findall(
                r"^(\S+ \S+) \| INFO \| .*(?:Saved checkpoint|done training)",
                (self.run / "train.log").read_text(),
                re.M,
            )
            seconds = [time.mktime(time.strptime(s, "%Y-%m-%d %H:%M:%S")) for s in stamps]
            took["train"] = max(1.0, seconds[-1] - seconds[0])
        return took

    def kill(self, point: str, after: float, sig: int = signal.SIGKILL, damage: bool = False) -> Optional[Kill]:
        """Start the runner, and ``after`` seconds into ``point`` send it ``sig``; None when
        the runner ended without reaching the point (it was done before)."""
        proc = self.start()
        record = None
        for _, line in self.lines(proc):
            if point_began(line) == point:
                if point == "train":  # a kill worth making: one a resume must continue from
                    wait_for(self.run / "checkpoint_last.pt", 120)
                time.sleep(after)
                before = tree(proc.pid, processes())
                proc.send_signal(sig)
                t0 = time.monotonic()
                proc.wait(60)
                left = survivors(before, str(self.folder))
                while left and time.monotonic() - t0 < SURVIVAL:
                    time.sleep(0.1)
                    left = survivors(before, str(self.folder))
                record = Kill(
                    point,
                    after,
                    signal.Signals(sig).name,
                    survivors=left,
                    seconds_to_go=round(time.monotonic() - t0, 2),
                )
                break
        self.log += proc.stdout.read().splitlines()  # what a stopped runner says last
        proc.stdout.close()
        proc.wait(60)
        if record is None:
            return None
        if damage and (self.run / "checkpoint_last.pt").is_file():
            last = self.run / "checkpoint_last.pt"
            with open(last, "r+b") as f:
                f.truncate(last.stat().st_size // 2)
            record.damaged = True
        record.landed = self.landed(point)
        return record

    def landed(self, point: str) -> str:
        """Where a kill at ``point`` landed, from what the campaign left."""
        if point in STAGES:
            root = self.run if point != "prepare" else next((self.work / "data").glob("debian_en_de*/"), None)
            stamp = root / ".stages" / f"{point}.json" if root else None
            return "after the stage" if stamp and stamp.is_file() else "inside the stage"
        if point == "commit":
            staged = subprocess.run(["git", "diff", "--cached", "--quiet"], cwd=self.repo).returncode != 0
            return "between add and commit" if staged else "outside the add-commit gap"
        return "inside the write" if self.leftovers() else "between the write's files"

    def leftovers(self) -> List[str]:
        return sorted(str(p.relative_to(self.repo)) for p in (self.repo / "results").rglob(".*.tmp*"))

    def record(self) -> dict:
        """What a finished campaign must have in common with an uninterrupted one."""
        import torch

        from mixer_plugin.experiments.collect import parse_train_log
        from mixer_plugin.experiments.record import RunRecord

        gen = self.run / "gen-test"
        score = json.loads((gen / "score.json").read_text())
        averaged = torch.load(self.run / "averaged_last2.pt", map_location="cpu", weights_only=False)["model"]
        table = (self.repo / "results" / "faults.md").read_text()
        row = next(line for line in table.splitlines() if line.startswith("| `transformer`"))
        cells = row.split("|")[1:-1]
        header = next(line for line in table.splitlines() if line.startswith("| model"))
        names = [c.strip() for c in header.split("|")[1:-1]]
        kept = self.repo / "results" / "faults" / "runs" / "transformer" / "seed1"
        git_status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=self.repo, capture_output=True, text=True
        ).stdout
        return {
            "hyp.txt": (gen / "hyp.txt").read_bytes(),
            "averaged model": {k: v.numpy().tobytes() for k, v in averaged.items()},
            "scores": {k: score[k] for k in ("bleu", "chrf")},
            "valid curve": [(p["num_updates"], p["loss"]) for p in parse_train_log(self.run / "train.log")["valid"]],
            "table row": {n: c.strip() for n, c in zip(names, cells) if n not in ("train wps", "decode sent/s")},
            "kept hyp.txt": lzma.decompress((kept / "hyp.txt.xz").read_bytes()),
            "kept score": {k: RunRecord.load(kept / "run.json").scores[k] for k in ("bleu", "chrf")},
            "kept stages": sorted(RunRecord.load(kept / "run.json").stages),
            "uncommitted": git_status,
            "leftovers": self.leftovers(),
        }

    def trainings(self) -> int:
        """How many fairseq-train ran to their end in the run's log: one, or two where a
        kill landed after the training's end but before its stage's stamp."""
        return (self.run / "train.log").read_text().count("done training")

    def overlaps(self) -> List[str]:
        """Trainings that ran at once: each start of the runner appends one training to
        the log under its ``$ command`` line, and within one training the updates only
        rise; two at once interleave their lines (every validation twice, the updates
        going back and forth)."""
        bad = []
        for i, part in enumerate(re.split(r"^\$ ", (self.run / "train.log").read_text(), flags=re.M)[1:]):
            updates = [int(u) for u in re.findall(r"\| train_inner \|.*?num_updates=(\d+)", part)]
            if any(b <= a for a, b in zip(updates, updates[1:])) or part.count("done training") > 1:
                bad.append(f"training {i + 1}: updates {updates[:40]}")
        return bad


def point_began(line: str) -> Optional[str]:
    m = re.search(r"\] (?:data|\S+/seed\d+) (\w+): started", line)
    if m:
        return m.group(1)
    if line.startswith("@results"):
        return "results"
    if line.startswith("@git add"):
        return "commit"
    return None


def point_ended(line: str) -> Optional[str]:
    m = re.search(r"\] (?:data|\S+/seed\d+) (\w+): done in", line)
    if m:
        return m.group(1)
    if re.search(r"\] results: ", line):
        return "results"
    if line.startswith("@git") and not line.startswith(("@git add", "@git diff")):
        return "commit"
    return None


def wait_for(path: Path, timeout: float):
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def differences(a: dict, b: dict) -> List[str]:
    return [k for k in a if a[k] != b[k]]


# ------------------------------------------------------------- the long sweep
def sweep(rounds: int, seed: int, folder: Path, corpus: Path) -> dict:
    """``rounds`` campaigns, each killed at every point once (the signal and the moment
    drawn at random, ``train`` kills damaging checkpoint_last.pt every other time), each
    compared with one uninterrupted campaign."""
    rng = random.Random(seed)
    reference = Campaign(folder / "reference", corpus)
    took = reference.complete()
    expected = reference.record()
    kills, mismatches, campaigns = [], [], []
    for r in range(rounds):
        c = Campaign(folder / f"round{r + 1}", corpus)
        for point in POINTS:
            sig = rng.choice([signal.SIGKILL, signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
            k = c.kill(point, rng.uniform(0, took.get(point, 1.0)), sig, damage=point == "train" and r % 2 == 0)
            if k is not None:
                kills.append(k)
                print(
                    f"round {r + 1}: {k.signal} {k.point} +{k.after:.2f}s: {k.landed}"
                    + (", checkpoint_last.pt damaged" if k.damaged else "")
                    + (f", SURVIVORS {k.survivors}" if k.survivors else ""),
                    flush=True,
                )
        c.complete()
        try:
            diff = differences(expected, c.record())
        except FileNotFoundError as e:  # the campaign ended without the run's outputs
            diff = [f"unfinished: {Path(e.filename).name} missing"]
        mismatches += [f"round {r + 1}: {d}" for d in diff]
        campaigns.append(
            {"round": r + 1, "trainings finished": c.trainings(), "trainings at once": c.overlaps(), "differs in": diff}
        )
        shutil.rmtree(c.folder / "work", ignore_errors=True)  # checkpoints: a sweep of many rounds fills a disk
    return {
        "rounds": rounds,
        "seed": seed,
        "kills": len(kills),
        "by point": {
            p: {
                "kills": sum(k.point == p for k in kills),
                "landed": {
                    w: sum(k.point == p and k.landed == w for k in kills)
                    for w in sorted({k.landed for k in kills if k.point == p})
                },
                "signals": {
                    s: sum(k.point == p and k.signal == s for k in kills) for s in ("SIGKILL", "SIGTERM", "SIGINT")
                },
                "damaged checkpoints": sum(k.point == p and k.damaged for k in kills),
            }
            for p in POINTS
        },
        "runs with survivors": sum(bool(k.survivors) for k in kills),
        "slowest to go (s)": max((k.seconds_to_go for k in kills), default=0.0),
        "campaigns differing from the uninterrupted one": len({m.split(":")[0] for m in mismatches}),
        "campaigns with two trainings at once": sum(bool(c["trainings at once"]) for c in campaigns),
        "mismatches": mismatches,
        "campaigns": campaigns,
        "uninterrupted seconds by point": {p: round(t, 2) for p, t in took.items()},
    }


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "drive":
        return drive(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sweep", help="the longer sweep")
    s.add_argument("--rounds", type=int, default=10)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--folder", type=Path, required=True, help="scratch folder (several GB of checkpoints at most)")
    s.add_argument("--json", type=Path, help="write the figures here")
    a = p.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from conftest import corpus_folder

    corpus = corpus_folder(a.folder / "corpus")
    figures = sweep(a.rounds, a.seed, a.folder, corpus)
    text = json.dumps(figures, indent=1)
    print(text)
    if a.json:
        a.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
