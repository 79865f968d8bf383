"""``mixer-bench``: the speed and memory benchmarks.  Benchmarks, not tests: they assert
nothing, and each records its command, machine, load and date beside its tables.

    mixer-bench mixers       one layer of every mixer against stock attention, over length
    mixer-bench layer-ops    one layer's training step op by op (torch.profiler)
    mixer-bench ngram-forms  multiNN's eq. (5) in five formulations (which one the mixer uses)
    mixer-bench heads        the interacting-head paper's mixers over the number of heads
    mixer-bench multiscale   multi-scale attention's banded kernels against dense attention
    mixer-bench hard-ops     one decoding step of hard retrieval, op by op (the paper's Table 2)
    mixer-bench decode       fairseq-generate speed of every decoder mixer over output length
    mixer-bench decode-ops   where a decoding step's time goes, op by op (torch.profiler)
    mixer-bench train        fairseq-train words/s of whole models (the leaderboard's)
    mixer-bench flops        FLOPs of one training update of whole models (counted, not timed)

``mixer-bench NAME --help`` shows a benchmark's options; results go to
``results/bench/bench_<name>_<device>.{md,json}`` unless ``--md`` / ``--json`` say otherwise.
What they share sits beside them, in modules of one job each: building a mixer for a role
(``layer_modules``), timing a step (``layer_measure``), multiply-adds and peak FLOP/s
(``flops``), run metadata (``run_record``), the outputs (``result_files``), the layer
benchmarks' options and table parts (``layer_args``, ``layer_tables``); the decoding
benchmarks' models, timed fairseq-generate and options (``decode_models``, ``decode_timing``,
``decode_args``).
"""

import importlib
import os
import sys
from typing import List, Optional

BENCHMARKS = {
    "mixers": "mixers",
    "layer-ops": "layer_ops",
    "ngram-forms": "ngram_forms",
    "heads": "heads",
    "multiscale": "multiscale",
    "hard-ops": "hard_ops",
    "decode": "decode",
    "decode-ops": "decode_ops",
    "train": "train",
    "flops": "train_flops",
}


def main(argv: Optional[List[str]] = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in BENCHMARKS:
        print(__doc__)
        if argv and argv[0] not in ("-h", "--help"):
            print(
                f"mixer-bench: error: unknown benchmark {argv[0]!r} (known: {', '.join(BENCHMARKS)})", file=sys.stderr
            )
            sys.exit(2)
        return
    if argv[0] in IN_PROCESS_GENERATE:
        under_runner_allocator()
    module = importlib.import_module(f"{__name__}.{BENCHMARKS[argv[0]]}")
    module.main(argv[1:])


# benchmarks that run fairseq-generate inside their own process
IN_PROCESS_GENERATE = ("decode", "decode-ops")


def under_runner_allocator() -> None:
    """glibc reads its ``MALLOC_*`` settings once, at start-up, and a long output's
    decoder caches are large enough for them to matter (results/bench/bench_allocator_cpu.md):
    a benchmark that generates in its own process starts itself again, once, under the
    settings ``mixer-run`` gives every fairseq command, so that it measures what the
    runner runs.  A user's own settings are kept."""
    from ..experiments.commands import ALLOCATOR_ENV

    if all(name in os.environ for name in ALLOCATOR_ENV):
        return
    env = {**ALLOCATOR_ENV, **os.environ}
    if sys.argv[0].endswith("mixer-bench"):
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    os.execve(sys.executable, [sys.executable, "-m", __name__, *sys.argv[1:]], env)


if __name__ == "__main__":
    main()
