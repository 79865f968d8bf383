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
import dataclasses
import json
import os
import re
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple, Union

if TYPE_CHECKING:
    from sacrebleu.metrics.base import Metric

SACRE = ("bleu", "chrf", "ter")
KNOWN = SACRE + ("tok_bleu", "rouge", "rougeL", "wer")
LOWER_IS_BETTER = {"ter", "wer"}


class ScoreError(ValueError):
    """A bad input to the scorer: the message names the file or the option."""


@dataclasses.dataclass(frozen=True)
class Options:
    """The scorer's switches (the command line's flags of the same names)."""

    lowercase: bool = False  # case-insensitive BLEU / chrF / TER (and tokenized BLEU)
    compound_split: bool = False  # tokenized BLEU: a-b -> a ##AT##-##AT## b
    rouge_sent_sep: Optional[str] = None  # the sentence separator inside a summary, for ROUGE-Lsum
    wer_on_tok: bool = False  # WER on the tokenized text
    samples: int = 1000  # paired bootstrap resamples


def check_metrics(metrics: Sequence[str]) -> List[str]:
    unknown = [m for m in metrics if m not in KNOWN]
    if unknown:
        raise ScoreError(f"--metrics: unknown metric {unknown[0]!r} (known: {', '.join(KNOWN)})")
    return list(metrics)


def read_lines(path: Union[str, Path], what: str) -> List[str]:
    if not os.path.isfile(path):
        raise ScoreError(f"{what} file not found: {path}")
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise ScoreError(f"{what} file is not valid UTF-8: {path} ({e})") from None
    # Split on "\n" only (str.splitlines would also split on U+2028, \x0c, ...).
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def compound_split(line: str) -> str:
    """fairseq's compound_split_bleu.sh: perl -ple 's{(\\S)-(\\S)}{$1 ##AT##-##AT## $2}g'."""
    return re.sub(r"(\S)-(\S)", r"\1 ##AT##-##AT## \2", line)


# ------------------------------------------------------------------ metrics
def sacre_metric(name: str, lowercase: bool = False, tokenized: bool = False) -> "Metric":
    from sacrebleu.metrics import BLEU, CHRF, TER

    if name == "bleu":
        if tokenized:  # multi-bleu.perl: the text's own tokens, no smoothing
            return BLEU(tokenize="none", smooth_method="none", lowercase=lowercase, force=True)
        return BLEU(lowercase=lowercase)
    if name == "chrf":
        return CHRF(lowercase=lowercase)
    if name == "ter":
        return TER(case_sensitive=not lowercase)
    raise ValueError(name)


def score_sacre(
    name: str, hyps: Sequence[str], refs: Sequence[str], lowercase: bool = False, tokenized: bool = False
) -> Tuple[float, str, str]:
    metric = sacre_metric(name, lowercase, tokenized)
    res = metric.corpus_score(hyps, [refs])
    return res.score, str(res), str(metric.get_signature())


def score_rouge(
    hyps: Sequence[str],
    refs: Sequence[str],
    sent_sep: Optional[str] = None,
    types: Sequence[str] = ("rouge1", "rouge2", "rougeL", "rougeLsum"),
) -> Dict[str, float]:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(list(types), use_stemmer=True)
    total = {t: 0.0 for t in types}

    def lsum(text: str) -> str:  # rougeLsum reads sentences from newlines
        return "\n".join(s.strip() for s in text.split(sent_sep)) if sent_sep else text

    def flat(text: str) -> str:  # the separator is no word: rouge-score would keep "<q>" as "q"
        return " ".join(text.split(sent_sep)) if sent_sep else text

    for h, r in zip(hyps, refs):
        s = scorer.score(flat(r), flat(h))  # (target, prediction)
        if "rougeLsum" in types:
            s["rougeLsum"] = scorer.score(lsum(r), lsum(h))["rougeLsum"]
        for t in types:
            total[t] += s[t].fmeasure
    n = max(1, len(refs))
    return {t: 100.0 * v / n for t, v in total.items()}


def score_wer(hyps: Sequence[str], refs: Sequence[str]) -> Tuple[float, int]:
    import jiwer

    pairs = [(r, h) for r, h in zip(refs, hyps) if r.strip()]
    if not pairs:
        raise ScoreError("every reference line is empty: WER is undefined")
    out = jiwer.process_words([r for r, _ in pairs], [h for _, h in pairs])
    return 100.0 * out.wer, len(refs) - len(pairs)


def score(
    hyps: Sequence[str],
    refs: Sequence[str],
    metrics: Sequence[str] = ("bleu", "chrf"),
    hyps_tok: Optional[Sequence[str]] = None,
    refs_tok: Optional[Sequence[str]] = None,
    options: Options = Options(),
) -> Dict:
    """One system's scores, {metric: value} plus each metric's detail and signature.
    ``hyps_tok``/``refs_tok``: the tokenized text, for ``tok_bleu`` and WER on tokens."""
    metrics = check_metrics(metrics)
    if len(hyps) != len(refs):
        raise ScoreError(f"line counts differ: {len(hyps)} hypotheses, {len(refs)} references")
    needs_tok = "tok_bleu" in metrics or ("wer" in metrics and options.wer_on_tok)
    if needs_tok and (hyps_tok is None or refs_tok is None):
        raise ScoreError("tokenized BLEU and --wer-on-tok need the tokenized hypotheses and reference")
    lower = options.lowercase
    res = {}
    for m in metrics:
        if m in SACRE:
            res[m], res[f"{m}_detail"], res[f"{m}_signature"] = score_sacre(m, hyps, refs, lower)
        elif m == "tok_bleu":
            h = [compound_split(x) for x in hyps_tok] if options.compound_split else hyps_tok
            r = [compound_split(x) for x in refs_tok] if options.compound_split else refs_tok
            res[m], res["tok_bleu_detail"], sig = score_sacre("bleu", h, r, lower, tokenized=True)
            res["tok_bleu_signature"] = sig + ("|compound-split" if options.compound_split else "")
        elif m == "rouge":
            res.update(score_rouge(hyps, refs, options.rouge_sent_sep))
            res["rouge_signature"] = "rouge-score|F1|stemmer:porter|avg:segments" + (
                f"|lsum-sep:{options.rouge_sent_sep}" if options.rouge_sent_sep else ""
            )
        elif m == "rougeL":
            res["rougeL"] = score_rouge(hyps, refs, None, ("rougeL",))["rougeL"]
            res["rougeL_signature"] = "rouge-score|F1|stemmer:porter|avg:segments"
        elif m == "wer":
            on_tok = options.wer_on_tok
            res["wer"], skipped = score_wer(hyps_tok if on_tok else hyps, refs_tok if on_tok else refs)
            res["wer_signature"] = (
                f"jiwer|corpus|{'tokenized' if on_tok else 'detokenized'}|empty-refs-skipped:{skipped}"
            )
    return res


def by_source(
    sources: Sequence[str],
    metrics: Sequence[str],
    hyps: Sequence[str],
    refs: Sequence[str],
    options: Options = Options(),
) -> Dict[str, Dict[str, float]]:
    """{source: {"lines": n, metric: value}} for the sacrebleu metrics of one system;
    ``sources``: the source (domain) of each reference line."""
    if len(sources) != len(refs):
        raise ScoreError(f"line counts differ: {len(sources)} sources, {len(refs)} references")
    out = {}
    for name in dict.fromkeys(sources):
        idx = [i for i, s in enumerate(sources) if s == name]
        out[name] = {"lines": len(idx)}
        for m in metrics:
            if m in SACRE:
                out[name][m] = round(
                    score_sacre(m, [hyps[i] for i in idx], [refs[i] for i in idx], options.lowercase)[0], 2
                )
    return out


def headline(m: str) -> List[str]:
    return ["rouge1", "rouge2", "rougeL", "rougeLsum"] if m == "rouge" else [m]


def bootstrap(
    hyps: Sequence[str],
    base: Sequence[str],
    refs: Sequence[str],
    metrics: Sequence[str],
    hyps_tok: Optional[Sequence[str]] = None,
    base_tok: Optional[Sequence[str]] = None,
    refs_tok: Optional[Sequence[str]] = None,
    options: Options = Options(),
) -> Dict:
    """Paired bootstrap resampling of a system against a baseline on the same references:
    {metric: {baseline, system, their resampled means and 95% intervals, p_value,
    signature}}, for bleu / chrf / ter (sacrebleu's test), tok_bleu and ROUGE."""
    from sacrebleu.significance import PairedTest

    metrics = check_metrics(metrics)
    if not len(hyps) == len(base) == len(refs):
        raise ScoreError(f"line counts differ: {len(hyps)} hypotheses, {len(base)} baseline, {len(refs)} references")
    if "tok_bleu" in metrics and None in (hyps_tok, base_tok, refs_tok):
        raise ScoreError("tokenized BLEU needs the tokenized hypotheses, baseline and reference")
    out = {}
    groups = []
    sacre = {m: sacre_metric(m, options.lowercase) for m in metrics if m in SACRE}
    if sacre:
        groups.append((sacre, base, hyps, refs))
    if "tok_bleu" in metrics:
        cs = compound_split if options.compound_split else (lambda x: x)
        groups.append(
            (
                {"tok_bleu": sacre_metric("bleu", options.lowercase, tokenized=True)},
                [cs(x) for x in base_tok],
                [cs(x) for x in hyps_tok],
                [cs(x) for x in refs_tok],
            )
        )
    rouge_types = [
        t
        for m in metrics
        if m in ("rouge", "rougeL")
        for t in (("rouge1", "rouge2", "rougeL") if m == "rouge" else ("rougeL",))
    ]
    if rouge_types:
        out.update(rouge_bootstrap(options, rouge_types, base, hyps, refs))
    for named, b, h, r in groups:
        test = PairedTest([("baseline", b), ("system", h)], named, [r], test_type="bs", n_samples=options.samples)
        sigs, scores = test()
        for key, (name, metric) in zip(scores, [("System", None)] + list(named.items())):
            if metric is None:
                continue
            base_res, sys_res = scores[key]
            out[name] = {
                "baseline": round(base_res.score, 2),
                "system": round(sys_res.score, 2),
                "baseline_mean": round(float(base_res.mean), 2),
                "baseline_ci95": round(float(base_res.ci), 2),
                "system_mean": round(float(sys_res.mean), 2),
                "system_ci95": round(float(sys_res.ci), 2),
                "p_value": round(float(sys_res.p_value), 4),
                "signature": str(sigs[key]),
            }
    return out


def rouge_bootstrap(
    options: Options,
    types: Sequence[str],
    base: Sequence[str],
    hyps: Sequence[str],
    refs: Sequence[str],
    seed: int = 12345,
) -> Dict[str, Dict[str, Union[float, str]]]:
    """Paired bootstrap resampling of segment-level ROUGE F1 (Koehn 2004), with the p-value
    computed as sacrebleu's paired bootstrap does (its PairedTest covers BLEU/chrF/TER only)."""
    import numpy as np
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(list(types), use_stemmer=True)
    sep = options.rouge_sent_sep
    flat = (lambda t: " ".join(t.split(sep))) if sep else (lambda t: t)
    seg = {t: np.zeros((2, len(refs))) for t in types}
    for i, (b, h, r) in enumerate(zip(base, hyps, refs)):
        for j, text in enumerate((b, h)):
            sc = scorer.score(flat(r), flat(text))
            for t in types:
                seg[t][j, i] = 100.0 * sc[t].fmeasure
    rng = np.random.default_rng(seed)
    samples = options.samples
    idx = rng.integers(0, len(refs), size=(samples, len(refs)))
    out = {}
    for t in types:
        b_s, h_s = seg[t][0][idx].mean(1), seg[t][1][idx].mean(1)  # (n,) resampled corpus means
        diffs = h_s - b_s
        real = seg[t][1].mean() - seg[t][0].mean()
        p = (np.sum(np.abs(diffs - diffs.mean()) >= abs(real)) + 1) / (samples + 1)
        out[t] = {
            "baseline": round(float(seg[t][0].mean()), 2),
            "system": round(float(seg[t][1].mean()), 2),
            "baseline_mean": round(float(b_s.mean()), 2),
            "baseline_ci95": round(float(1.96 * b_s.std()), 2),
            "system_mean": round(float(h_s.mean()), 2),
            "system_ci95": round(float(1.96 * h_s.std()), 2),
            "p_value": round(float(p), 4),
            "signature": f"paired-bs|n:{samples}|seed:{seed}|rouge-score F1 per segment, stemmer:porter",
        }
    return out


def main(argv: Optional[Sequence[str]] = None) -> Dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
        "--baseline-seed-hyps) and its p, from one paired bootstrap (mixer_plugin/significance.py)",
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
            from .significance import pooled_bootstrap

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


if __name__ == "__main__":
    main()
