"""``mixer-bench``: the speed and memory benchmarks.  Benchmarks, not tests: they assert
nothing, and each records its command, machine, load and date beside its tables.

    mixer-bench mixers       one layer of every mixer against stock attention, over length
    mixer-bench heads        the interacting-head paper's mixers over the number of heads
    mixer-bench multiscale   multi-scale attention's banded kernels against dense attention
    mixer-bench hard-ops     one decoding step of hard retrieval, op by op (the paper's Table 2)
    mixer-bench decode       fairseq-generate speed of every decoder mixer over output length
    mixer-bench decode-ops   where a decoding step's time goes, op by op (torch.profiler)
    mixer-bench train        fairseq-train words/s of whole models (the leaderboard's)

``mixer-bench NAME --help`` shows a benchmark's options; results go to
``results/bench_<name>_<device>.{md,json}`` unless ``--md`` / ``--json`` say otherwise.
"""

import importlib
import sys

BENCHMARKS = {"mixers": "mixers", "heads": "heads", "multiscale": "multiscale", "hard-ops": "hard_ops",
              "decode": "decode", "decode-ops": "decode_ops", "train": "train"}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in BENCHMARKS:
        print(__doc__)
        if argv and argv[0] not in ("-h", "--help"):
            print(f"mixer-bench: error: unknown benchmark {argv[0]!r} (known: {', '.join(BENCHMARKS)})", file=sys.stderr)
            sys.exit(2)
        return
    module = importlib.import_module(f"{__name__}.{BENCHMARKS[argv[0]]}")
    module.main(argv[1:])


if __name__ == "__main__":
    main()
