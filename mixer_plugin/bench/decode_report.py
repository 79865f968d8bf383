"""The report of ``mixer-bench decode``: its markdown (speed per model, length and beam; hard
retrieval against its ceiling; whether the windowed decoders' advantage grows with length) and
its plot of speed against output length."""

from pathlib import Path
from typing import Any, Dict, List, Tuple

from .decode_models import SPECS, bounded_state


def markdown(
    meta: Dict[str, Any],
    rows: List[Dict[str, Any]],
    labels: List[str],
    lengths: List[int],
    beams: List[int],
    profile: Dict[Tuple[int, int], Dict[str, Any]],
) -> str:
    by = {(r["model"], r["L"], r["beam"]): r for r in rows}
    base = meta.get("baseline", "transformer")
    described = meta.get("models", "`mixer_small_attn` (2+2 layers, d=256, 4 heads) with its mixer in the decoder")
    out = [
        f"# Decoding speed over output length ({meta['device']})",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; torch {meta['torch']}, {meta['threads']} threads; load average at start "
        f"{meta['load_start']}, at end {meta['load_end']}; wall {meta['wall_s']:.0f} s",
        f"- every model: {described}, the "
        f"same {meta['sentences']} test sentences in one batch, every hypothesis pinned to L tokens; "
        f"fairseq-generate's own timing, median of {meta['rounds']} rounds (models round-robin); speed-up "
        f"against the {'transformer' if base == 'transformer' else f'`{base}`'} of the same (L, beam)",
        "",
    ]
    for b in beams:
        out += [
            f"## beam {b}",
            "",
            f"sentences/s (speed-up vs {base}); ms per decoding step",
            "",
            "| model | " + " | ".join(f"L={L}" for L in lengths) + " |",
            "|---|" + "---:|" * len(lengths),
        ]
        for label in labels:
            cells = []
            for L in lengths:
                r = by[(label, L, b)]
                cells.append(f"{r['sent_per_s']:.1f} ({r['speedup']:.2f}x); {r['ms_per_step']:.1f} ms")
            out.append(f"| `{label}` | " + " | ".join(cells) + " |")
        out.append("")
    # the mixer-family sections read labels of MODELS: an experiment's rows are named by the file
    mixers = not meta.get("experiment")
    hard = [(L, b) for L in lengths for b in beams if ("hard", L, b) in by] if mixers else []
    if hard:
        out += [
            "## Hard retrieval against its ceiling",
            "",
            "The transformer's decoding step, profiled (hooks on its decoder attention modules): the share s "
            "of the step spent in attention bounds what any replacement of attention can gain at 1 / (1 - s).",
            "",
            "| L | beam | attention share of the step | ceiling | `hard` speed-up | share of the ceiling |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
    for L, b in hard:
        r = by[("hard", L, b)]
        out.append(
            f"| {L} | {b} | {r['transformer_attention_share']:.0%} | {r['ceiling']:.2f}x | "
            f"{r['speedup']:.2f}x | {r['speedup'] / r['ceiling']:.0%} |"
        )
    windowed = [m for m in labels if SPECS.get(m) and bounded_state(SPECS[m])] if mixers else []
    if windowed and mixers and len(lengths) > 1:
        out += [
            "",
            "## Does the windowed decoders' advantage grow with length?",
            "",
            "| model | beam | " + " | ".join(f"L={L}" for L in lengths) + " | grows |",
            "|---|---:|" + "---:|" * len(lengths) + "---|",
        ]
        for m in windowed:
            for b in beams:
                s = [by[(m, L, b)]["speedup"] for L in lengths]
                grows = "yes" if all(y > x for x, y in zip(s, s[1:])) else "no"
                out.append(f"| `{m}` | {b} | " + " | ".join(f"{x:.2f}x" for x in s) + f" | {grows} |")
    out.append("")
    return "\n".join(out)


def plot(rows: List[Dict[str, Any]], labels: List[str], beams: List[int], path: Path, device: str) -> None:
    from ..plotting import pyplot

    plt = pyplot()

    fig, axes = plt.subplots(1, len(beams), figsize=(5.2 * len(beams), 3.8), squeeze=False)
    for ax, b in zip(axes[0], beams):
        for label in labels:
            pts = sorted((r["L"], r["sent_per_s"]) for r in rows if r["model"] == label and r["beam"] == b)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=label, ms=3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("output length (tokens)")
        ax.set_ylabel("sentences/s")
        ax.set_title(f"beam {b}")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"fairseq-generate speed against output length ({device}, mixer_small size)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
