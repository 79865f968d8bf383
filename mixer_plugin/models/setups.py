"""Set-ups from outside fairseq that a model can be trained under, each a model flag of
``mixer_transformer`` so that an experiment can switch it on one row at a time.

They come from the hard-retrieval paper's implementation (the Neutron project,
``hfxunlp/transformer``), which trains differently from fairseq in ways that may matter
more to a mixer than to stock attention (docs/hard_retrieval.md, "Neutron's set-up and
ours"):

* ``--param-init lipschitz``: the Lipschitz-constrained initialisation of Xu et al.
  (2020a, "Lipschitz Constrained Parameter Initialization for Deep Transformers"), as
  Neutron applies it (``utils/init/base.py``, on by default there): every linear weight
  from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), every linear bias 0, embeddings from
  U(-a, a) with a = sqrt(2 / (vocab + d)) and the padding row 0, layer norms weight 1 and
  bias 0.  Parameters of other kinds (a mixer's own mixing matrices) keep their mixer's
  initialisation.  fairseq still scales embeddings by sqrt(d) unless
  ``--no-scale-embedding``.
* ``--no-attention-bias``: the attention projections (q, k, v and out) of every
  attention mixer, stock ``attn`` included, without bias, as Neutron's are
  (``enable_proj_bias_default`` is False).  The biases are held at 0 and left out of
  training (``requires_grad`` off: fairseq's optimizers take only trainable parameters),
  because fairseq's MultiheadAttention cannot run with ``bias=False`` (its fused path
  concatenates the three biases); the parameter count still lists them.
"""

import argparse
import math

import torch
from fairseq.modules import MultiheadAttention
from torch import nn

from ..mixers.attention_base import AttentionMixer

PARAM_INITS = ("fairseq", "lipschitz")
ATTENTION_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "out_proj")


def add_setup_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--param-init",
        choices=PARAM_INITS,
        help="fairseq: each module's own initialisation (default); lipschitz: Xu et al. 2020a's, "
        "as the hard-retrieval paper's Neutron applies it (mixer_plugin/models/setups.py)",
    )
    parser.add_argument(
        "--no-attention-bias",
        action="store_true",
        help="attention projections (q, k, v, out) without bias, as Neutron's: held at 0, not trained",
    )


@torch.no_grad()
def lipschitz_init_(model: nn.Module, padding_idx: int) -> None:
    """Xu et al. 2020a's initialisation in place (module docstring).  The embeddings are
    drawn last, as Neutron draws them: a tied output projection is a linear layer that
    holds the embedding matrix, and the embedding's law is the one it keeps."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            bound = 1.0 / math.sqrt(module.in_features)
            module.weight.uniform_(-bound, bound)
            if module.bias is not None:
                module.bias.zero_()
        elif isinstance(module, nn.LayerNorm) and module.elementwise_affine:
            module.weight.fill_(1.0)
            module.bias.zero_()
    for module in model.modules():
        if isinstance(module, nn.Embedding):
            vocab, dim = module.weight.shape
            bound = math.sqrt(2.0 / (vocab + dim))
            module.weight.uniform_(-bound, bound)
            module.weight[padding_idx].zero_()


@torch.no_grad()
def drop_attention_biases_(model: nn.Module) -> int:
    """Zero and freeze the q, k, v and out biases of every attention module; -> how many."""
    frozen = 0
    for module in model.modules():
        if isinstance(module, (MultiheadAttention, AttentionMixer)):
            for name in ATTENTION_PROJECTIONS:
                bias = getattr(module, name).bias
                if bias is not None:
                    bias.zero_()
                    bias.requires_grad_(False)
                    frozen += 1
    return frozen


def apply_setups(model: nn.Module, args: argparse.Namespace, padding_idx: int) -> None:
    """What ``args`` asks of the built model; the initialisation first, so that the
    dropped biases stay 0."""
    if (getattr(args, "param_init", None) or "fairseq") == "lipschitz":
        lipschitz_init_(model, padding_idx)
    if getattr(args, "no_attention_bias", False):
        drop_attention_biases_(model)
