"""How attention weight spreads over relative positions, per layer, from a checkpoint.

    mixer-attention-distance CKPT DATA_BIN --out results/attn_distance.png \\
        [--subset valid] [--side encoder|decoder] [--max-sentences 500] [--max-distance 16] [--json OUT]

The multiNN paper's Figure 1 (the self-attention of each encoder layer of a WMT
Transformer, by position relative to the query) and the multi-scale paper's Figure 3
(attention distance per layer): for every query i and key j of every sentence (padding
excluded), the weight a_ij, averaged over heads, is added to the bin of r = j - i
(|r| > --max-distance goes to the two outer bins); each layer's histogram is divided by
its number of queries, so a bin is the mean share of a query's attention at that offset
and a layer's bins sum to 1.

The model runs unchanged (eval mode, teacher forcing for the decoder); the weights are
read with hooks, so no mixer is modified:

* a forward pre-hook on every self-attention module sets ``need_weights`` and
  ``need_head_weights`` (fairseq's ``MultiheadAttention`` and every plugin mixer take
  them), and a forward hook takes the ``(H, B, T, S)`` weights;
* mixers that have no attention weights return none (``ngram``: multiNN's weights
  are fixed per offset) and are listed as such.
"""

import argparse
import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from .subset import load_subset


class Recorder:
    """Hooks on the self-attention modules of one side; collects (layer, weights, mask)."""

    def __init__(self, layers: torch.nn.ModuleList):
        self.handles, self.captured = [], {}
        self.names = [type(layer.self_attn).__name__ for layer in layers]
        for i, layer in enumerate(layers):
            self.handles.append(layer.self_attn.register_forward_pre_hook(self._ask_weights(i), with_kwargs=True))
            self.handles.append(layer.self_attn.register_forward_hook(self._take_weights(i), with_kwargs=True))

    def _ask_weights(self, i: int) -> Callable:
        def hook(
            module: torch.nn.Module, args: Tuple[Any, ...], kwargs: Dict[str, Any]
        ) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
            kwargs = dict(kwargs, need_weights=True, need_head_weights=True)
            self.captured[i] = {"pad": kwargs.get("key_padding_mask")}
            return args, kwargs

        return hook

    def _take_weights(self, i: int) -> Callable:
        def hook(
            module: torch.nn.Module, args: Tuple[Any, ...], kwargs: Dict[str, Any], output: Tuple[Any, ...]
        ) -> None:
            w = output[1]
            if w is not None:
                # (H, B, T, S) per head, or (B, T, S) already averaged over heads (fairseq's
                # MultiheadAttention takes torch's fused path, which averages)
                self.captured[i]["w"] = (w.transpose(0, 1) if w.dim() == 4 else w.unsqueeze(1)).float()

        return hook

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def accumulate(
    hist: List[torch.Tensor],
    counts: List[int],
    layer: int,
    w: torch.Tensor,
    pad: Optional[torch.Tensor],
    max_d: int,
) -> None:
    """Add a batch's weights (B, H, T, S) to the layer's histogram over j - i."""
    B, H, T, S = w.shape
    w = w.mean(dim=1)  # (B, T, S): heads averaged
    rel = (torch.arange(S).view(1, S) - torch.arange(T).view(T, 1)).clamp(-max_d - 1, max_d + 1) + max_d + 1
    valid_q = torch.ones(B, T, dtype=torch.bool) if pad is None else ~pad[:, :T]
    if pad is not None:
        w = w.masked_fill(pad.view(B, 1, S), 0.0)
    w = w * valid_q.view(B, T, 1)
    hist[layer].index_add_(0, rel.reshape(-1), w.sum(0).reshape(-1).double())
    counts[layer] += int(valid_q.sum())


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint")
    p.add_argument("data", help="the binarized data the model was trained on")
    p.add_argument("--subset", default="valid")
    p.add_argument("--side", choices=("encoder", "decoder"), default="encoder")
    p.add_argument("--max-sentences", type=int, default=500)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-distance", type=int, default=16)
    p.add_argument("--out", required=True, help="the plot (.png)")
    p.add_argument("--json", help="the histograms as JSON [--out with .json]")
    p.add_argument("--title")
    args = p.parse_args(argv)

    model, task, batches = load_subset(args.checkpoint, args.data, args.subset, args.max_sentences, args.batch_size)
    model.eval()
    side = model.encoder if args.side == "encoder" else model.decoder
    rec = Recorder(side.layers)
    D = args.max_distance
    hist = [torch.zeros(2 * D + 3, dtype=torch.float64) for _ in side.layers]
    counts = [0] * len(side.layers)
    n = sum(len(batch["id"]) for batch in batches)
    with torch.no_grad():
        for batch in batches:
            rec.captured = {}
            net = batch["net_input"]
            model(net["src_tokens"], net["src_lengths"], net["prev_output_tokens"])
            for i, c in rec.captured.items():
                if c.get("w") is not None:
                    pad = c["pad"]
                    if pad is None and args.side == "decoder":
                        pad = net["prev_output_tokens"].eq(task.target_dictionary.pad())
                    accumulate(hist, counts, i, c["w"], pad, D)
    rec.remove()

    labels = [f"<-{D}"] + [str(r) for r in range(-D, D + 1)] + [f">{D}"]
    layers = []
    for i, name in enumerate(rec.names):
        share = (hist[i] / counts[i]).tolist() if counts[i] else None
        kind = name if share else f"{name}: no attention weights"
        layers.append({"layer": i + 1, "module": kind, "queries": counts[i], "share": share})
    result = {
        "checkpoint": args.checkpoint,
        "subset": args.subset,
        "side": args.side,
        "sentences": n,
        "relative_positions": labels,
        "layers": layers,
    }
    out_json = Path(args.json or Path(args.out).with_suffix(".json"))
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(result, indent=1) + "\n")

    from ..plotting import pyplot

    plt = pyplot()

    shown = [lay for lay in layers if lay["share"]]
    fig, axes = plt.subplots(
        len(shown) or 1, 1, figsize=(7, 1.6 * max(1, len(shown)) + 0.6), sharex=True, squeeze=False
    )
    for ax, lay in zip(axes[:, 0], shown):
        ax.bar(range(len(labels)), lay["share"], color="tab:blue")
        ax.set_ylabel(f"layer {lay['layer']}", fontsize=8)
        ax.set_ylim(0, max(lay["share"]) * 1.15)
    axes[-1, 0].set_xticks(range(0, len(labels), 2))
    axes[-1, 0].set_xticklabels(labels[::2], fontsize=7)
    axes[-1, 0].set_xlabel("key position relative to the query (j - i)")
    skipped = [f"{lay['layer']}: {lay['module']}" for lay in layers if not lay["share"]]
    title = args.title or f"{args.side} self-attention weight by relative position ({n} {args.subset} sentences)"
    fig.suptitle(title + (f"\nno weights: layer {', '.join(skipped)}" if skipped else ""), fontsize=9)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    for lay in layers:
        near = sum(lay["share"][D + 1 - 2 : D + 1 + 3]) if lay["share"] else None
        print(
            f"layer {lay['layer']}: {lay['module']}"
            + (f"; share within |j-i|<=2: {near:.3f}" if near is not None else "")
        )
    print(f"wrote {args.out} and {out_json}")


if __name__ == "__main__":
    main()
