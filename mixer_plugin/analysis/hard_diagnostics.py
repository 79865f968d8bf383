"""What a trained hard-retrieval model's attention looks like, without training it again.

    mixer-hard-diagnostics CKPT DATA_BIN [--subset valid] [--max-sentences 1000] [--draws 3]
        [--json OUT] [--md OUT]

Hard retrieval trains on keys sampled from P = softmax(QK^T / sqrt(d)) (eq. 2, 4-5) and
decodes with the argmax of the raw scores (eq. 11).  The two agree only where P is sharp.
On the subset this reports:

* per hard module (layer, role) and head: the mean entropy of P over the real queries
  (nats), the same divided by the entropy of a uniform P over the query's allowed keys
  (1 = flat, 0 = one-hot), and the mean largest probability;
* the model's validation NLL (base 2, as fairseq's ``nll_loss``; no label smoothing) three
  ways: the argmax forward it decodes with, the sampled forward it trained with (the hard
  modules in training mode, attention dropout off, the rest in eval mode; the mean and
  spread over ``--draws`` passes), and the soft forward (every hard module with
  ``decode=soft``: the paper's Table 4 "decode soft").

A flat P (normalised entropy near 1) says the retrievals are noise; a sharp P with a
large gap between the sampled and the argmax NLL says that training and decoding see
different models.  The model runs unchanged: P is recomputed from each hard module's own
scores by a wrapper around its ``attend``, which then runs as before.
"""

import argparse
import json
import math
import statistics
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..mixers import Role
from ..mixers.hard import HardRetrievalAttention
from .subset import load_subset


def head_stats(probs: Tensor, real: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """Sums over the real queries of one batch, per head: entropy (nats), entropy over that
    of a uniform P on the allowed keys, largest probability, and the number of queries
    counted.  probs ``(B, H, T, S)`` with 0 at blocked keys; real ``(B, T)``, True at a
    query to count.  A query with fewer than two allowed keys has no choice to make and is
    left out."""
    allowed = (probs > 0).sum(dim=-1)  # (B, H, T)
    counted = real.unsqueeze(1) & (allowed > 1)  # (B, H, T)
    entropy = -(probs * probs.clamp_min(1e-30).log()).sum(dim=-1)  # (B, H, T)
    flat = allowed.clamp_min(2).double().log()
    w = counted.double()
    return (
        (entropy.double() * w).sum(dim=(0, 2)),
        (entropy.double() / flat * w).sum(dim=(0, 2)),
        (probs.max(dim=-1).values.double() * w).sum(dim=(0, 2)),
        w.sum(dim=(0, 2)),
    )


class Spy:
    """Wraps each hard module's ``attend``: recomputes P from its scores and sums its
    statistics per head, then lets the module run as it would have."""

    def __init__(self, modules: Dict[str, HardRetrievalAttention]):
        self.modules = modules
        self.sums: Dict[str, List[Tensor]] = {}
        self.query_mask: Dict[str, Optional[Tensor]] = {"encoder": None, "decoder": None}  # True at padding
        self.recording = True
        for name, module in modules.items():
            module.attend = self._wrap(name, module, module.attend)

    def _wrap(self, name: str, module: HardRetrievalAttention, attend: Any) -> Any:
        def spied(q: Tensor, streams: Dict[str, Tensor], key_padding_mask: Optional[Tensor], offset: int,
                  need_weights: bool) -> Tuple[Tensor, Optional[Tensor]]:  # fmt: skip
            if self.recording:
                k = module.split_heads(streams["k"], module.head_dim)  # (B, H, S, d)
                scores = torch.matmul(q.float(), k.float().transpose(-1, -2)) * module.scaling  # (1): (B, H, T, S)
                logits = module.mask_scores(scores, key_padding_mask, offset, float("-inf"))
                probs = F.softmax(logits, dim=-1).nan_to_num(0.0)  # (2); a row with no key: all 0
                side = "encoder" if module.role is Role.ENCODER_SELF else "decoder"
                pad = self.query_mask[side]
                real = torch.ones(probs.shape[0], probs.shape[2], dtype=torch.bool) if pad is None else ~pad
                stats = head_stats(probs, real[:, -probs.shape[2] :])
                self.sums[name] = [a + b for a, b in zip(self.sums[name], stats)] if name in self.sums else list(stats)
            return attend(q, streams, key_padding_mask, offset, need_weights)

        return spied

    def table(self) -> List[Dict[str, Any]]:
        rows = []
        for name, (entropy, relative, largest, count) in self.sums.items():
            for h in range(len(count)):
                n = max(float(count[h]), 1.0)
                rows.append(
                    {
                        "module": name,
                        "head": h,
                        "queries": int(count[h]),
                        "entropy": float(entropy[h]) / n,
                        "entropy_vs_uniform": float(relative[h]) / n,
                        "max_prob": float(largest[h]) / n,
                    }
                )
        return rows


def hard_modules(model: nn.Module) -> Dict[str, HardRetrievalAttention]:
    """``encoder.layers.0.self_attn``-style names -> the model's hard-retrieval modules."""
    return {name: m for name, m in model.named_modules() if isinstance(m, HardRetrievalAttention)}


def nll(model: nn.Module, batches: List[Dict[str, Any]], pad: int, spy: Spy) -> float:
    """The mean NLL per target token, base 2, over the batches."""
    total, tokens = 0.0, 0
    with torch.no_grad():
        for batch in batches:
            net = batch["net_input"]
            spy.query_mask = {"encoder": net["src_tokens"].eq(pad), "decoder": net["prev_output_tokens"].eq(pad)}
            out = model(net["src_tokens"], net["src_lengths"], net["prev_output_tokens"])
            lprobs = model.get_normalized_probs(out, log_probs=True)  # (B, T, V)
            target = batch["target"]
            keep = target.ne(pad)
            total -= float(lprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1)[keep].sum())
            tokens += int(keep.sum())
    return total / max(tokens, 1) / math.log(2)


def diagnose(model: nn.Module, batches: List[Dict[str, Any]], pad: int, draws: int, seed: int = 1) -> Dict[str, Any]:
    modules = hard_modules(model)
    if not modules:
        raise ValueError("the model has no hard-retrieval module (mixer `hard`)")
    model.eval()
    spy = Spy(modules)
    argmax = nll(model, batches, pad, spy)  # and the statistics of P, once
    spy.recording = False
    saved = {name: (m.dropout_p, m.decode_mode) for name, m in modules.items()}
    torch.manual_seed(seed)
    sampled = []
    for m in modules.values():
        m.train()  # the hard modules sample; every other module stays in eval mode (no dropout)
        m.dropout_p = 0.0
    for _ in range(draws):
        sampled.append(nll(model, batches, pad, spy))
    for name, m in modules.items():
        m.eval()
        m.dropout_p = saved[name][0]
        m.decode_mode = "soft"
    soft = nll(model, batches, pad, spy)
    for name, m in modules.items():
        m.decode_mode = saved[name][1]
    return {
        "heads": spy.table(),
        "nll": {
            "argmax": argmax,
            "sampled": statistics.mean(sampled),
            "sampled_std": statistics.stdev(sampled) if len(sampled) > 1 else 0.0,
            "soft": soft,
            "draws": draws,
        },
    }


def markdown(result: Dict[str, Any]) -> str:
    n = result["nll"]
    lines = [
        f"# Hard retrieval diagnostics: `{result['checkpoint']}`",
        "",
        f"On `{result['subset']}`, {result['sentences']} sentences.",
        "",
        "| forward | NLL (base 2) |",
        "|---|---:|",
        f"| argmax (eq. 11, as decoded) | {n['argmax']:.3f} |",
        f"| sampled (eq. 4-5, as trained; {n['draws']} draws) | {n['sampled']:.3f} ± {n['sampled_std']:.3f} |",
        f"| soft (decode=soft, Table 4) | {n['soft']:.3f} |",
        "",
        "| module | head | queries | entropy (nats) | entropy / uniform | max P |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in result["heads"]:
        lines.append(f"| `{r['module']}` | {r['head']} | {r['queries']:,} | {r['entropy']:.3f} | "
                     f"{r['entropy_vs_uniform']:.3f} | {r['max_prob']:.3f} |")  # fmt: skip
    lines += ["", "Reading: entropy / uniform near 1 is a flat P (noise); a sharp P with a large sampled-argmax "
              "gap is a train/decode mismatch (mixer_plugin/analysis/hard_diagnostics.py)."]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(
        prog="mixer-hard-diagnostics", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("checkpoint")
    p.add_argument("data", help="the binarized data the model was trained on")
    p.add_argument("--subset", default="valid")
    p.add_argument("--max-sentences", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--draws", type=int, default=3, help="sampled forward passes to average")
    p.add_argument("--json", help="write the result as JSON here")
    p.add_argument("--md", help="write the tables here (printed otherwise)")
    args = p.parse_args(argv)
    if args.draws < 1:
        p.error("--draws must be >= 1")

    if not Path(args.checkpoint).is_file():
        p.error(f"checkpoint {args.checkpoint} not found")
    model, task, batches = load_subset(args.checkpoint, args.data, args.subset, args.max_sentences, args.batch_size)
    n = sum(len(b["id"]) for b in batches)
    try:
        result = diagnose(model, batches, task.target_dictionary.pad(), args.draws)
    except ValueError as e:
        p.error(f"{args.checkpoint}: {e}")
    result.update(checkpoint=args.checkpoint, subset=args.subset, sentences=n)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    md = markdown(result)
    if args.md:
        Path(args.md).write_text(md, encoding="utf-8")
    else:
        print(md)


if __name__ == "__main__":
    main()
