"""Where a decoding step's time goes: fairseq-generate under ``torch.profiler`` for a few
decoder mixers at one output length and beam, op by op and region by region.

    mixer-bench decode-ops DATA_BIN                  # transformer, hard, hard_soft at L=300, beam 4
    mixer-bench decode-ops DATA_BIN --length 100 --beam 1 --mixers transformer,hard

A profile, not a test.  The models, checkpoints and pinned output lengths are those of
``mixer-bench decode``.  ``hard_soft`` is the ``hard`` mixer with ``decode=soft``: the same
module, projections and cache code, with softmax(QKᵀ)·V (eq. 2-3) where ``hard`` runs
argmax + index (eq. 11, 6), so ``hard`` against ``hard_soft`` is exactly what the
retrieval saves, and ``hard_soft`` against ``transformer`` is what the module's code
around the equation costs against fairseq's ``MultiheadAttention``.

Regions (inclusive time, per decoding step): the decoder's self- and cross-attention
modules (forward hooks), the mixer's own equation (``attend``, the plugin's mixers only)
and the beam's cache reorder (``reorder_incremental_state``); then the aten ops with the
most self time.  The profiler's own overhead is in every figure, the same for every model.
"""

import argparse
import datetime
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from .decode_args import add_common_args, checked_labels
from .decode_models import MODELS, SMALL, make_checkpoint
from .decode_timing import generate
from .result_files import RESULTS, write_outputs
from .run_record import command_line, cpu_label

if TYPE_CHECKING:
    import torch
    from torch import nn

REGIONS = ("self-attention modules", "cross-attention modules", "attend (the equation)", "cache reorder")


class Regions:
    """Profiler ranges around the decoder's attention modules, the plugin mixers'
    ``attend`` and the decoder's cache reorder, for one fairseq-generate."""

    def __init__(self):
        self.handles, self.open, self.patched, self.profiles, self.wall = [], [], [], [], []

    def install(self) -> None:
        from fairseq.models.fairseq_incremental_decoder import FairseqIncrementalDecoder
        from fairseq.models.transformer import TransformerDecoderBase
        from fairseq.sequence_generator import SequenceGenerator
        from torch.profiler import ProfilerActivity, profile

        regions = self
        forward, reorder = TransformerDecoderBase.forward, FairseqIncrementalDecoder.reorder_incremental_state_scripting
        search = SequenceGenerator.generate

        def profiled_search(generator: SequenceGenerator, *args, **kwargs):
            # only the beam search is profiled: loading and building the model are not
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                t0 = time.perf_counter()
                out = search(generator, *args, **kwargs)
                regions.wall.append(time.perf_counter() - t0)
            regions.profiles.append(prof)
            return out

        def labelled_forward(decoder: TransformerDecoderBase, *args, **kwargs):
            if not decoder.__dict__.get("_labelled"):
                decoder._labelled = True
                for layer in decoder.layers:
                    regions.label(layer.self_attn, REGIONS[0])
                    regions.label(layer.encoder_attn, REGIONS[1])
            return forward(decoder, *args, **kwargs)

        def labelled_reorder(decoder: FairseqIncrementalDecoder, *args, **kwargs):
            with regions.range(REGIONS[3]):
                return reorder(decoder, *args, **kwargs)

        TransformerDecoderBase.forward = labelled_forward
        FairseqIncrementalDecoder.reorder_incremental_state_scripting = labelled_reorder
        SequenceGenerator.generate = profiled_search
        self.patched = [
            (TransformerDecoderBase, "forward", forward),
            (FairseqIncrementalDecoder, "reorder_incremental_state_scripting", reorder),
            (SequenceGenerator, "generate", search),
        ]

    @staticmethod
    def range(name: str) -> "torch.autograd.profiler.record_function":
        import torch

        return torch.autograd.profiler.record_function(name)

    def label(self, module: "nn.Module", name: str) -> None:
        def enter(m: "nn.Module", args: Tuple[Any, ...]) -> None:
            self.open.append(self.range(name).__enter__())

        def leave(m: "nn.Module", args: Tuple[Any, ...], out: Any) -> None:
            self.open.pop().__exit__(None, None, None)

        self.handles += [module.register_forward_pre_hook(enter), module.register_forward_hook(leave)]
        if hasattr(module, "attend"):  # a plugin AttentionMixer: its equation, on the instance
            attend = module.attend

            def labelled_attend(*args, **kwargs):
                with self.range(REGIONS[2]):
                    return attend(*args, **kwargs)

            module.attend = labelled_attend

    def remove(self) -> None:
        for cls, name, original in self.patched:
            setattr(cls, name, original)
        for h in self.handles:
            h.remove()


def profile_one(
    data: str,
    checkpoint: Union[str, Path],
    L: int,
    beam: int,
    sentences: int,
    langs: Tuple[str, str],
    top: int,
) -> Dict[str, Any]:
    regions = Regions()
    regions.install()
    try:
        generate(data, checkpoint, L, beam, sentences, langs)
    finally:
        regions.remove()
    if len(regions.profiles) != 1:
        raise SystemExit(f"mixer-bench decode-ops: error: expected one beam search, saw {len(regions.profiles)}")
    steps = L + 1
    region_ms = {name: 0.0 for name in REGIONS}
    ops = []
    for e in regions.profiles[0].key_averages():
        if e.key in region_ms:
            region_ms[e.key] = e.cpu_time_total / 1e3 / steps
        elif e.key.startswith("aten::"):
            ops.append((e.key, e.self_cpu_time_total / 1e3 / steps, e.count / steps))
    ops.sort(key=lambda x: -x[1])
    return {
        "search_s": regions.wall[0],
        "ms_per_step": 1e3 * regions.wall[0] / steps,
        "regions_ms_per_step": region_ms,
        "top_ops": ops[:top],
    }


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(
        prog="mixer-bench decode-ops", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_args(ap)
    ap.add_argument("--length", type=int, default=300, help="output length L")
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--sentences", type=int, default=32, help="sentences decoded (one batch)")
    ap.add_argument("--mixers", default="transformer,hard,hard_soft", help=f"of {', '.join(MODELS)}")
    ap.add_argument("--top", type=int, default=12, help="aten ops listed per model")
    args = ap.parse_args(argv)
    labels = checked_labels(args, ap.prog, transformer_first=False)
    import torch

    langs = (args.source_lang, args.target_lang)
    t0, load_start = time.time(), " ".join(f"{v:.2f}" for v in os.getloadavg())
    from torch.profiler import profile

    with profile():  # the profiler's first start is slow: not inside a measurement
        torch.ones(1).add_(1)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label in labels:
            ckpt = make_checkpoint(args.data, [*SMALL, *MODELS[label]], Path(tmp) / label, langs)
            generate(args.data, ckpt, args.length, args.beam, args.sentences, langs)  # warm-up, untimed
            plain = generate(args.data, ckpt, args.length, args.beam, args.sentences, langs)
            results[label] = profile_one(args.data, ckpt, args.length, args.beam, args.sentences, langs, args.top)
            results[label]["unprofiled_ms_per_step"] = plain["ms_per_step"]
            print(f"{label:14s} {results[label]['ms_per_step']:7.1f} ms/step (profiled)", flush=True)
    meta = {
        "command": command_line(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": cpu_label(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "load_start": load_start,
        "load_end": " ".join(f"{v:.2f}" for v in os.getloadavg()),
        "wall_s": time.time() - t0,
        "L": args.length,
        "beam": args.beam,
        "sentences": args.sentences,
    }
    out_md = args.md or str(RESULTS / "bench_decode_ops_cpu.md")
    out_json = args.json or str(Path(out_md).with_suffix(".json"))
    write_outputs(out_md, out_json, markdown(meta, results), {"meta": meta, "results": results})


def markdown(meta: Dict[str, Any], results: Dict[str, Dict[str, Any]]) -> str:
    labels = list(results)
    out = [
        f"# Where a decoding step's time goes ({meta['device']})",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; torch {meta['torch']}, {meta['threads']} threads; load average at start "
        f"{meta['load_start']}, at end {meta['load_end']}; wall {meta['wall_s']:.0f} s",
        f"- `mixer_small_attn` (2+2 layers, d=256, 4 heads) with each mixer in the decoder, {meta['sentences']} "
        f"test sentences in one batch, beam {meta['beam']}, every hypothesis pinned to L = {meta['L']} tokens; "
        "one fairseq-generate under torch.profiler per model (its overhead is in every figure)",
        "",
        "## Regions, ms per decoding step (inclusive)",
        "",
        "| region | " + " | ".join(f"`{m}`" for m in labels) + " |",
        "|---|" + "---:|" * len(labels),
    ]
    out.append(
        "| whole step, without the profiler (fairseq's timer) | "
        + " | ".join(f"{results[m]['unprofiled_ms_per_step']:.1f}" for m in labels)
        + " |"
    )
    out.append(
        "| whole step (the beam search's wall time) | "
        + " | ".join(f"{results[m]['ms_per_step']:.1f}" for m in labels)
        + " |"
    )
    for name in REGIONS:
        out.append(f"| {name} | " + " | ".join(f"{results[m]['regions_ms_per_step'][name]:.1f}" for m in labels) + " |")
    for m in labels:
        out += [
            "",
            f"## `{m}`: aten ops by self time, ms per decoding step",
            "",
            "| op | ms per step | calls per step |",
            "|---|---:|---:|",
        ]
        out += [f"| `{k}` | {ms:.2f} | {n:.0f} |" for k, ms, n in results[m]["top_ops"]]
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    main()
