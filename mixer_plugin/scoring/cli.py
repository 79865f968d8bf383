"""``mixer-score``: the one scorer of every experiment: hypotheses against one reference,
one segment a line.

    mixer-score HYP REF [--json OUT]                      # BLEU + chrF (sacrebleu)
    mixer-score HYP REF --metrics bleu,chrf,ter,wer,rouge --json OUT
    mixer-score HYP REF --hyp-tok HYP.tok --ref-tok REF.tok --compound-split  # + tokenized BLEU
    mixer-score HYP REF --seed-hyps HYP2 HYP3              # 3 seeds: mean +- std
    mixer-score HYP REF --baseline BASE_HYP                # paired bootstrap vs a baseline
    mixer-score H1 REF --seed-hyps H2 H3 --baseline B1 --baseline-seed-hyps B2 B3 --pooled
                                                          # the gap between seed means and its p
    mixer-score HYP REF --sources SOURCES                  # + each source's own scores

Metrics (``--metrics``, comma-separated; default ``bleu,chrf``):

* ``bleu``, ``chrf``, ``ter``: sacrebleu on detokenized text (its own 13a tokenisation),
  each with its signature;
* ``tok_bleu`` (on whenever ``--ref-tok`` is given): BLEU on the *tokenized* text as it is
  (sacrebleu ``tokenize=none``, no smoothing, i.e. multi-bleu.perl), case-sensitive unless
  ``--lowercase``.  ``--compound-split`` first rewrites ``a-b`` as ``a ##AT##-##AT## b`` in
  hypothesis and reference (fairseq's compound_split_bleu.sh, as the WMT en-de papers do);
* ``rouge``: ROUGE-1/2/L F1 (and ROUGE-Lsum) with Google's rouge-score, Porter stemming,
  averaged over segments, x100.  Its tokenizer keeps only [a-z0-9] (English);
  ``--rouge-sent-sep SEP`` splits multi-sentence summaries for ROUGE-Lsum;
* ``rougeL``: ROUGE-L F1 only (the interacting-head paper reports it for MT);
* ``wer``: word error rate with jiwer over the whole corpus (edits / reference words,
  x100), on whitespace words of the detokenized text (of the tokenized text with
  ``--wer-on-tok``).

``--seed-hyps``: more runs of the same system (other seeds); every metric is given per
run and as mean +- sample std (n-1).  ``--baseline``: sacrebleu's paired bootstrap
resampling (1000 samples) of HYP against the baseline for bleu/chrf/ter (and tok_bleu),
with p-values; with seeds, the first run is tested.  ``--sources``: a file naming the
source (domain) of each reference line; bleu, chrf and ter are also given per source
(first run).

As a library, over lists of lines: :func:`score` (one system's metrics) and
:func:`bootstrap` (a system against a baseline), with :class:`Options` for the switches
above; a bad input raises :class:`ScoreError`.  The command line reads the files, calls
those two and prints; its errors are one line each and exit 2.
"""

import argparse
import json
import os
import re
import statistics
import sys
from typing import Dict, List, Optional, Sequence, Tuple

from .metrics import (
    KNOWN,
    SACRE,
    Options,
    ScoreError,
    bootstrap,
    by_source,
    check_metrics,
    headline,
    read_lines,
    score,
)
from .significance import pooled_bootstrap


def main(argv: Optional[Sequence[str]] = None) -> Dict:
    p = argparse.ArgumentParser(
        prog="mixer-score", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("hyp", help="hypothesis file (detokenized, one segment per line)")
    p.add_argument("ref", help="reference file (detokenized, one segment per line)")
    p.add_argument("--json", metavar="OUT", help="also write the scores as JSON to OUT")
    p.add_argument("--metrics", default="bleu,chrf", help=f"comma-separated, of {', '.join(KNOWN)} [bleu,chrf]")
    p.add_argument(
        "--hyp-tok",
        nargs="+",
        metavar="FILE",
        help="tokenized hypotheses (one per run, in the "
        "order HYP, --seed-hyps...); default: each HYP with .txt -> .tok",
    )
    p.add_argument("--ref-tok", help="tokenized reference: turns on tok_bleu")
    p.add_argument("--compound-split", action="store_true", help="tok_bleu: split a-b into a ##AT##-##AT## b")
    p.add_argument("--lowercase", action="store_true", help="case-insensitive BLEU/chrF/TER")
    p.add_argument("--rouge-sent-sep", help="sentence separator inside a summary line, for ROUGE-Lsum")
    p.add_argument("--wer-on-tok", action="store_true", help="WER on the tokenized text")
    p.add_argument("--seed-hyps", nargs="+", default=[], metavar="HYP", help="other seeds of the same system")
    p.add_argument("--baseline", metavar="HYP", help="baseline hypotheses for paired bootstrap resampling")
    p.add_argument("--baseline-tok", metavar="FILE", help="the baseline's tokenized hypotheses (for tok_bleu)")
    p.add_argument("--baseline-seed-hyps", nargs="+", default=[], metavar="HYP", help="other seeds of the baseline")
    p.add_argument(
        "--pooled",
        action="store_true",
        help="also the gap between the seed means (HYP and --seed-hyps against --baseline and "
        "--baseline-seed-hyps) and its p, from one paired bootstrap (mixer_plugin/scoring/significance.py)",
    )
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap samples [1000]")
    p.add_argument("--label", help="a name for the system, kept in the JSON")
    p.add_argument("--sources", metavar="FILE", help="the source of each reference line: scores per source too")
    args = p.parse_args(argv)
    try:
        return score_files(args)
    except ScoreError as e:
        print(f"mixer-score: error: {e}", file=sys.stderr)
        sys.exit(2)


def cli(argv: Optional[Sequence[str]] = None) -> None:
    """The ``mixer-score`` command: :func:`main`, exiting 0 (a console script exits with what
    its function returns, and :func:`main` returns the scores)."""
    main(argv)


def score_files(args: argparse.Namespace) -> Dict:
    """The command line's work: read the files, score every run, the bootstrap against
    the baseline, print, and write the JSON."""
    metrics = check_metrics([m for m in args.metrics.split(",") if m])
    options = Options(
        lowercase=args.lowercase,
        compound_split=args.compound_split,
        rouge_sent_sep=args.rouge_sent_sep,
        wer_on_tok=args.wer_on_tok,
        samples=args.bootstrap,
    )
    if args.ref_tok and "tok_bleu" not in metrics:
        metrics.append("tok_bleu")
    if "tok_bleu" in metrics and not args.ref_tok:
        raise ScoreError("--metrics tok_bleu needs --ref-tok (the tokenized reference)")
    if args.compound_split and not args.ref_tok:
        raise ScoreError("--compound-split applies to tokenized BLEU: give --ref-tok")

    refs = read_lines(args.ref, "reference")
    if not refs:
        raise ScoreError(f"reference file is empty: {args.ref}")
    runs = [args.hyp] + args.seed_hyps
    need_tok = args.ref_tok is not None or ("wer" in metrics and args.wer_on_tok)
    refs_tok = read_lines(args.ref_tok, "tokenized reference") if args.ref_tok else refs
    if len(refs_tok) != len(refs):
        raise ScoreError(
            f"line counts differ: --ref-tok {args.ref_tok} has {len(refs_tok)} lines, reference has {len(refs)}"
        )
    if args.hyp_tok and len(args.hyp_tok) != len(runs):
        raise ScoreError(f"--hyp-tok gives {len(args.hyp_tok)} files for {len(runs)} hypothesis runs")

    def tok_of(i: int, path: str) -> str:
        if args.hyp_tok:
            return args.hyp_tok[i]
        return re.sub(r"\.txt$", ".tok", path) if path.endswith(".txt") else path + ".tok"

    def load(path: str, tok_path: str, what: str) -> Tuple[List[str], List[str]]:
        hyps = read_lines(path, what)
        if len(hyps) != len(refs):
            raise ScoreError(
                f"line counts differ: {what} {path} has {len(hyps)} lines, reference {args.ref} has {len(refs)}"
            )
        hyps_tok = hyps
        if need_tok:
            hyps_tok = read_lines(tok_path, f"tokenized {what}")
            if len(hyps_tok) != len(refs):
                raise ScoreError(f"line counts differ: {tok_path} has {len(hyps_tok)} lines, reference has {len(refs)}")
        return hyps, hyps_tok

    per_run = []
    loaded = []
    for i, path in enumerate(runs):
        hyps, hyps_tok = load(path, tok_of(i, path), "hypothesis")
        loaded.append((hyps, hyps_tok))
        per_run.append(score(hyps, refs, metrics, hyps_tok, refs_tok, options))

    values = [k for m in metrics for k in headline(m)]
    result = {"hyp": args.hyp, "ref": args.ref, "lines": len(refs), "metrics": metrics}
    if args.label:
        result["label"] = args.label
    if args.ref_tok:
        result.update(ref_tok=args.ref_tok, compound_split=args.compound_split)
    first = per_run[0]
    for k, v in first.items():
        result[k] = round(v, 2) if isinstance(v, float) else v
    if len(runs) > 1:
        result["runs"] = runs
        result["seeds"] = {
            k: {
                "mean": round(statistics.mean(r[k] for r in per_run), 2),
                "std": round(statistics.stdev(r[k] for r in per_run), 2),
                "values": [round(r[k], 2) for r in per_run],
            }
            for k in values
        }
        for k in values:  # the headline numbers of several seeds are their means
            result[k] = result["seeds"][k]["mean"]
    if args.sources:
        sources = read_lines(args.sources, "sources")
        if len(sources) != len(refs):
            raise ScoreError(
                f"line counts differ: --sources {args.sources} has {len(sources)} lines, reference has {len(refs)}"
            )
        result["by_source"] = by_source(sources, metrics, loaded[0][0], refs, options)
    if args.baseline:
        derived = re.sub(r"\.txt$", ".tok", args.baseline) if args.baseline.endswith(".txt") else args.baseline + ".tok"
        base, base_tok = load(args.baseline, args.baseline_tok or derived, "baseline")
        result["baseline"] = args.baseline
        result["bootstrap"] = bootstrap(loaded[0][0], base, refs, metrics, loaded[0][1], base_tok, refs_tok, options)
        if args.pooled:
            bases = [base] + [load(h, h, "baseline")[0] for h in args.baseline_seed_hyps]
            result["pooled"] = {
                k: pooled_bootstrap([h for h, _ in loaded], bases, refs, k, options.samples)
                for m in metrics
                for k in headline(m)
                if k in ("bleu", "chrf", "rouge1", "rouge2", "rougeL")
            }
    elif args.pooled or args.baseline_seed_hyps:
        raise ScoreError("--pooled and --baseline-seed-hyps need --baseline")

    for k in values:
        line = f"{k}: {result[k]:.2f}"
        if len(runs) > 1:
            s = result["seeds"][k]
            line += f" (mean of {len(runs)} runs, std {s['std']:.2f}: {', '.join(f'{v:.2f}' for v in s['values'])})"
        print(line)
        base_key = k if k in SACRE or k == "tok_bleu" else None
        if base_key and f"{base_key}_detail" in first and len(runs) == 1:
            print(f"  {first[f'{base_key}_detail']}")
        sig = first.get(f"{k}_signature") or (first.get("rouge_signature") if k.startswith("rouge") else None)
        if sig:
            print(f"  signature: {sig}")
    for name, scores in result.get("by_source", {}).items():
        print(
            f"{name} ({scores['lines']} lines): " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items() if k != "lines")
        )
    for name, b in result.get("bootstrap", {}).items():
        print(
            f"paired bootstrap {name}: baseline {b['baseline']:.2f} -> system {b['system']:.2f} "
            f"(95% CI +-{b['system_ci95']:.2f}), p = {b['p_value']:.4f}"
        )
    for name, b in result.get("pooled", {}).items():
        print(
            f"pooled bootstrap {name}: {len(b['system'])} against {len(b['baseline'])} runs, "
            f"gap between the means {b['delta']:+.2f} (95% CI {b['ci95'][0]:+.2f} .. {b['ci95'][1]:+.2f}), "
            f"p = {b['p_value']:.4f}"
        )
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, args.json)
    return result
