"""The metrics of ``mixer-score`` over lists of lines: :func:`score` (one system's metrics),
:func:`by_source` (the same per source), :func:`bootstrap` and :func:`rouge_bootstrap` (a
system against a baseline, sacrebleu's paired bootstrap), with :class:`Options` for the
switches; a bad input raises :class:`ScoreError`.  What each metric is: ``cli.py``'s docstring.
"""

import dataclasses
import lzma
import os
import re
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
        # a run's kept hypotheses are xz (experiments/archive.py): read as the text they hold
        with (lzma.open if str(path).endswith(".xz") else open)(path, "rt", encoding="utf-8", newline="") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise ScoreError(f"{what} file is not valid UTF-8: {path} ({e})") from None
    except lzma.LZMAError as e:
        raise ScoreError(f"{what} file is not a valid xz file: {path} ({e})") from None
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
