"""Hard retrieval attention (Xu et al., "Learning Hard Retrieval Decoder Attention
for Transformers").  Each head of each query attends to exactly ONE key, so the
probability-weighted sum over values (eq. 3) becomes an index into V.

Training (paper §3.1), per head::

    S = Q K^T                                        (1)
    P = softmax(S / sqrt(d))   over allowed keys     (2)
    i_t ~ Multinomial(P_t)     one key per query     (4)-(5)
    out_t = V[i_t]             a gather, no P V      (6)

The sampling is not differentiable; the paper treats it as noise on P (eq. 7), so the
gradient of the one-hot matrix is passed straight to P (eq. 8) and::

    dP = dOut V^T                                    (9)
    dV[i] += dOut_t   for every query t with i_t = i (10)   (an index-add)

which is what autograd gives for ``(onehot + P - P.detach()) @ V`` without ever
forming the dense product in the forward pass (tests/test_hard.py checks it).

Inference (§3.2): ``i_t = argmax_j S_tj`` on the RAW scores (eq. 11: no scaling and
no softmax, which cannot change the argmax), then the same gather (eq. 6).

Readings and switches (README, "hard retrieval attention"), all spec options that
leave the parameters unchanged, so they can be flipped at generate time with
fairseq's ``--model-overrides`` (the paper's Table 4):

  * ``train=hard|soft``: what the forward does in training mode;
  * ``decode=hard|soft``: what it does in eval mode (validation and generation);
  * ``values=all|retrieved``: in eval mode, project every value once (``all``) or
    only the retrieved rows (``retrieved``, §4.3: V is never computed for keys no
    head picks; the cache holds the keys' input instead of V).
  * ``samples=k`` (this plugin's, not the paper's): in training, k keys are sampled
    per head and query and their values averaged, out_t = (1/k) sum_j V[i_tj].  Its
    expectation is P V, as one sample's is, with a k-th of the variance; the gradient is
    eq. (9) to P and dOut_t / k index-added to each sampled row (eq. 10 for the mean).
    Eval mode is unchanged (argmax), so k is a training knob only.
  * Attention dropout (``--attention-dropout``) drops keys from the sampling
    distribution, as it drops probabilities from a soft attention.  A query whose
    allowed keys are all dropped retrieves nothing (output 0, like a fully dropped
    soft attention row); padding and future keys are never sampled.
"""

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from .attention_base import AttentionMixer
from .kernels import floor_of, fp32_at_least
from .registry import ALL_ROLES, MixerContext, check_positive, option, register_mixer


@dataclass(frozen=True)
class HardOptions:
    heads: Optional[int] = option(None, "heads (default: the layer's attention heads)")
    train: str = option(
        "hard", "training forward: hard (sampled retrieval, eq. 4-10) or soft", choices=("hard", "soft")
    )
    decode: str = option("hard", "eval forward: hard (argmax retrieval, eq. 11) or soft", choices=("hard", "soft"))
    values: str = option(
        "all", "eval mode: project all values, or only the retrieved rows (§4.3)", choices=("all", "retrieved")
    )
    samples: int = option(
        1, "training: keys sampled per head and query, their values averaged (the plugin's; the paper's is 1)"
    )

    def validate(self) -> Optional[str]:
        return check_positive(self, "heads", "samples")


def value_rows(index: Tensor, batch: int) -> Tensor:
    """Row numbers of the retrieved values in a time-major ``(S, B, H, dv)`` value
    tensor viewed as ``(S*B*H, dv)``: key ``index[b, h, t]`` of head h of sentence b
    is row ``(index * B + b) * H + h``.  Indexing the cache in its own layout costs
    no copy of V per step, and ``index_select`` on rows is far faster than ``gather``
    with an expanded index (`mixer-bench hard-ops` times both)."""
    B, H, _ = index.shape
    b = torch.arange(B, device=index.device).view(B, 1, 1)
    h = torch.arange(H, device=index.device).view(1, H, 1)
    return ((index * batch + b) * H + h).reshape(-1)  # (B*H*T,)


class _Retrieve(torch.autograd.Function):
    """out = the mean of V[index] over the k samples (eq. 6; k = 1 in the paper) with the
    straight-through gradient of eq. 7-10.

    probs ``(B, H, T, S)``, v time-major ``(S, B, H, dv)``, index ``(B, H, T, k)`` ->
    ``(B, H, T, dv)``.  ``probs`` is an input only so that autograd routes
    dOut V^T (eq. 9) to it: the forward never forms P V."""

    @staticmethod
    def forward(ctx: Any, probs: Tensor, v: Tensor, index: Tensor) -> Tensor:
        S, B, H, dv = v.shape
        k = index.size(-1)
        rows = value_rows(index.flatten(2), B)  # (B*H*T*k,): sample j of query t is row t*k + j
        ctx.save_for_backward(v, rows)
        ctx.probs_dtype, ctx.k = probs.dtype, k
        picked = v.reshape(S * B * H, dv).index_select(0, rows)  # (6): (B*H*T*k, dv)
        if k == 1:
            return picked.view(*index.shape[:-1], dv)
        return picked.view(*index.shape, dv).mean(dim=-2)  # (B, H, T, dv)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tuple[Optional[Tensor], Optional[Tensor], None]:
        v, rows = ctx.saved_tensors
        S, B, H, dv = v.shape
        k = ctx.k
        grad = grad.to(v.dtype)
        d_probs = d_v = None
        if ctx.needs_input_grad[0]:
            # the mean of k one-hot rows stands in for P as one does (eq. 7-8): the same eq. (9)
            d_probs = torch.matmul(grad, v.permute(1, 2, 3, 0)).to(ctx.probs_dtype)  # (9): (B, H, T, S)
        if ctx.needs_input_grad[1]:
            # (10) for the mean: dOut_t / k to each of query t's k sampled rows
            per_sample = grad if k == 1 else (grad / k).unsqueeze(-2).expand(*grad.shape[:-1], k, dv)
            d_v = grad.new_zeros(S * B * H, dv).index_add_(0, rows, per_sample.reshape(-1, dv))
            d_v = d_v.view(S, B, H, dv)
        return d_probs, d_v, None


def retrieve(probs: Tensor, v: Tensor, index: Tensor) -> Tensor:
    """eq. (6) with the straight-through gradient of eq. (7)-(10): probs ``(B, H, T, S)``,
    time-major v ``(S, B, H, dv)``, index ``(B, H, T)`` (one key a query) or
    ``(B, H, T, k)`` (k keys a query, their values averaged) -> ``(B, H, T, dv)``."""
    return _Retrieve.apply(probs, v, index if index.dim() == 4 else index.unsqueeze(-1))


@register_mixer("hard", HardOptions, roles=ALL_ROLES)
class HardRetrievalAttention(AttentionMixer):
    def __init__(self, ctx: MixerContext, opts: HardOptions):
        super().__init__(ctx, num_heads=opts.heads or ctx.num_heads)
        self.train_mode = opts.train
        self.decode_mode = opts.decode
        self.retrieve_values = opts.values == "retrieved"
        self.samples = opts.samples

    def _mode(self) -> str:
        return self.train_mode if self.training else self.decode_mode

    def keeps_keys_input(self) -> bool:
        """§4.3 in eval mode: the cache holds the keys' input instead of V."""
        return self.retrieve_values and not self.training and self.decode_mode == "hard"

    def fuse_qkv(self) -> bool:
        return not self.keeps_keys_input()

    def project_kv(self, kv_input: Tensor) -> Dict[str, Tensor]:
        if self.keeps_keys_input():
            # §4.3: keep the keys' input; V is projected only where a head looks
            return {"k": self.k_proj(kv_input), "x": kv_input}
        return super().project_kv(kv_input)

    def core_macs(self, T: int, S: int) -> int:
        if self._mode() == "soft":
            return super().core_macs(T, S)
        return self.pairs(T, S) * self.num_heads * self.head_dim  # scores only: the value is an index

    def attend(
        self,
        q: Tensor,
        streams: Dict[str, Tensor],
        key_padding_mask: Optional[Tensor],
        offset: int,
        need_weights: bool,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        B, H, T, _ = q.shape
        k = self.split_heads(streams["k"], self.head_dim)  # (B, H, S, d)
        S = k.size(2)
        if self._mode() == "soft":
            v = self.split_heads(streams["v"], self.value_dim)  # (B, H, S, dv)
            return self.soft_attention(q, k, v, key_padding_mask, offset, need_weights)
        scores = torch.matmul(q, k.transpose(-1, -2))  # (1): (B, H, T, S)
        if self.training:
            index, probs, empty = self.sample(scores, key_padding_mask, offset)
            v = streams["v"].view(S, B, H, self.value_dim)  # time-major, no copy
            out = retrieve(probs, v, index)  # (6) with the gradient of (7)-(10)
        else:
            index, empty = self.argmax(scores, key_padding_mask, offset)
            out = self.gather_values(streams, index)
        out = out.masked_fill(empty.unsqueeze(-1), 0.0)  # nothing to retrieve
        weights = None
        if need_weights:
            # each head's weights are one-hot on the retrieved key (the mean of k one-hots
            # in training with samples=k; zero when it retrieved nothing); fairseq's
            # alignment averages them over heads
            onehot = F.one_hot(index, S).to(out.dtype)
            onehot = onehot.mean(dim=-2) if index.dim() == 4 else onehot
            weights = onehot.masked_fill(empty.unsqueeze(-1), 0.0)
        return out, weights

    # ------------------------------------------------------------------ training
    def sample(self, scores: Tensor, key_padding_mask: Optional[Tensor], offset: int) -> Tuple[Tensor, Tensor, Tensor]:
        """eq. (2), (4)-(5): masked softmax, attention dropout, one key per query (k with
        ``samples=k``, drawn with replacement).  -> index ``(B, H, T)`` (``(B, H, T, k)``
        for k > 1), the (dropped) probabilities the gradient flows to, and the queries
        with no key left to sample ``(B, H, T)``."""
        # the softmax in float32 at least (fp16/bf16 would underflow small probabilities)
        acc = fp32_at_least(scores.dtype)
        # a finite floor keeps fully blocked rows NaN-free; they are zeroed below
        logits = self.mask_scores(scores.to(acc) * self.scaling, key_padding_mask, offset, floor_of(acc))
        probs = F.softmax(logits, dim=-1)  # (2)
        if self.dropout_p > 0:
            probs = F.dropout(probs, p=self.dropout_p, training=True)
        weights = self.mask_scores(probs.detach(), key_padding_mask, offset, 0.0)
        empty = weights.sum(dim=-1) <= 0  # (B, H, T): every allowed key blocked or dropped
        weights = weights.masked_fill(empty.unsqueeze(-1), 1.0)  # any index; its output is zeroed
        S = weights.size(-1)
        k = self.samples
        if k == 1:  # the paper's: exactly the draws of before the option existed
            index = torch.multinomial(weights.reshape(-1, S), 1).view(weights.shape[:-1])  # (4)-(5)
        else:
            index = torch.multinomial(weights.reshape(-1, S), k, replacement=True)  # (4)-(5): (B*H*T, k)
            index = index.view(*weights.shape[:-1], k)
        return index, probs, empty

    # ----------------------------------------------------------------- inference
    def argmax(self, scores: Tensor, key_padding_mask: Optional[Tensor], offset: int) -> Tuple[Tensor, Tensor]:
        """eq. (11) on the raw scores -> index ``(B, H, T)`` and the queries that see
        no key ``(B, H, T)`` (a padding query; found without a host sync)."""
        scores = self.mask_scores(scores, key_padding_mask, offset, float("-inf"))
        # max(): the first maximum, like argmax, and faster on CPU
        best = scores.max(dim=-1)
        return best.indices, best.values == float("-inf")

    def gather_values(self, streams: Dict[str, Tensor], index: Tensor) -> Tensor:
        """eq. (6) in eval mode: V[index] -> ``(B, H, T, dv)``."""
        B, H, T = index.shape
        if "v" in streams:
            rows = value_rows(index, B)
            return streams["v"].reshape(-1, self.value_dim).index_select(0, rows).view(B, H, T, -1)
        # §4.3: fetch the keys' input rows, then apply each head's slice of v_proj
        x = streams["x"]  # (S, B, C)
        rows = (index * B + torch.arange(B, device=index.device).view(B, 1, 1)).reshape(-1)
        picked = x.reshape(-1, x.size(-1)).index_select(0, rows).view(B, H, T, -1)  # (B, H, T, C)
        w = self.v_proj.weight.view(H, self.value_dim, -1)  # (H, dv, C)
        out = torch.einsum("bhtc,hvc->bhtv", picked, w)  # (B, H, T, dv)
        return out + self.v_proj.bias.view(1, H, 1, self.value_dim)
