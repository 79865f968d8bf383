"""``mixer_classifier``: an encoder-only text classifier for fairseq's stock
``sentence_prediction`` task, the model of Guo et al. ("Multi-Scale Self-Attention
for Text Classification", section "Classification node").

The encoder is the plugin's :class:`MixerTransformerEncoder`, so its mixers are
chosen per layer with the same ``--encoder-mixers`` specs, and
``--encoder-layer-form ms`` gives the MS-Transformer layer of eq. (10).  On top:

* the "[CLS]" node: a token put before every sentence, here the dictionary's
  ``<s>`` that ``sentence_prediction --init-token 0`` prepends.  "There is no
  difference between the [CLS] node and other tokens ... except it can directly
  contribute to the final representation";
* max-pooling over all nodes of the top layer (padding excluded);
* the two combined ("[CLS] node plus max-pooling"), read as concatenation
  (``--pooling concat``, default) or as a sum (``--pooling sum``); ``cls`` and
  ``max`` alone are there for ablations;
* a two-layer MLP (dropout, dense, activation, dropout, projection) to the classes;
  the softmax is the criterion's.

    fairseq-train DATA --user-dir mixer_plugin --task sentence_prediction \\
        --num-classes 41 --init-token 0 --criterion sentence_prediction \\
        --arch mixer_cls_ms ...
"""

import argparse
import logging
from typing import Dict, List, Optional, Tuple

import torch
from fairseq import utils
from fairseq.models import BaseFairseqModel, register_model, register_model_architecture
from fairseq.models.transformer import Embedding, TransformerConfig, TransformerModel
from fairseq.tasks import FairseqTask
from torch import Tensor, nn

from ..mixers import Role
from ..mixers.multiscale import PAPER_SCALES, schedule_specs
from .architectures import mixer_base_architecture, set_defaults
from .mixer_transformer import MixerTransformerEncoder, MSEncoderLayer, add_mixer_args

logger = logging.getLogger(__name__)
POOLINGS = ("concat", "sum", "cls", "max")


class ClassificationHead(nn.Module):
    """[CLS] node and max-pool over the top layer -> two-layer MLP."""

    def __init__(
        self, embed_dim: int, inner_dim: int, num_classes: int, pooling: str, activation_fn: str, dropout: float
    ):
        super().__init__()
        self.pooling = pooling
        in_dim = 2 * embed_dim if pooling == "concat" else embed_dim
        self.dropout = nn.Dropout(dropout)
        self.dense = nn.Linear(in_dim, inner_dim)
        self.activation_fn = utils.get_activation_fn(activation_fn)
        self.out_proj = nn.Linear(inner_dim, num_classes)

    def features(self, x: Tensor, padding_mask: Optional[Tensor], cls_index: Tensor) -> Tensor:
        """x ``(T, B, C)`` top-layer states, padding_mask ``(B, T)`` True at padding,
        cls_index ``(B,)`` the row of each sentence's [CLS] node -> ``(B, F)``."""
        B = x.size(1)
        parts = []
        if self.pooling != "max":
            parts.append(x[cls_index, torch.arange(B, device=x.device)])  # (B, C)
        if self.pooling != "cls":
            if padding_mask is not None:
                x = x.masked_fill(padding_mask.t().unsqueeze(-1), torch.finfo(x.dtype).min)
            parts.append(x.amax(dim=0))  # (B, C): max over the sentence's nodes
        if self.pooling == "sum":
            return parts[0] + parts[1]
        return torch.cat(parts, dim=-1)

    def forward(self, features: Tensor) -> Tensor:
        x = self.dropout(features)
        x = self.activation_fn(self.dense(x))
        return self.out_proj(self.dropout(x))  # (B, num_classes): logits


@register_model("mixer_classifier")
class MixerClassifierModel(BaseFairseqModel):
    """Sentence classifier: mixer encoder + [CLS]/max-pool features + MLP heads."""

    def __init__(self, args: argparse.Namespace, encoder: MixerTransformerEncoder):
        super().__init__()
        self.args = args
        self.encoder = encoder
        self.classification_heads = nn.ModuleDict()

    @classmethod
    def add_args(cls, parser: argparse.ArgumentParser) -> None:
        TransformerModel.add_args(parser)  # the encoder's flags (decoder flags are unused)
        add_mixer_args(parser, roles=(Role.ENCODER_SELF,))
        parser.add_argument(
            "--pooling",
            choices=POOLINGS,
            help="sentence features: [CLS] node and max-pool concatenated (concat) or "
            "summed (sum), or one of them alone",
        )
        parser.add_argument(
            "--classifier-inner-dim",
            type=int,
            metavar="N",
            help="hidden width of the two-layer MLP (default: --encoder-embed-dim)",
        )
        parser.add_argument(
            "--classifier-activation-fn",
            choices=utils.get_available_activation_fns(),
            help="activation of the two-layer MLP",
        )
        parser.add_argument(
            "--pooler-dropout",
            type=float,
            metavar="D",
            help="dropout before each layer of the MLP (default: --dropout)",
        )

    @classmethod
    def build_model(cls, args: argparse.Namespace, task: FairseqTask) -> "MixerClassifierModel":
        classifier_base_architecture(args)
        if getattr(args, "max_positions", None):
            # sentence_prediction's --max-positions bounds the input
            args.max_source_positions = args.max_positions
        cfg = TransformerConfig.from_namespace(args)
        dictionary = task.source_dictionary
        embed_tokens = Embedding(len(dictionary), cfg.encoder.embed_dim, dictionary.pad())
        model = cls(args, MixerTransformerEncoder(cfg, dictionary, embed_tokens))
        for line in model.mixer_summary():
            logger.info(line)
        return model

    def register_classification_head(self, name: str, num_classes: int, inner_dim: Optional[int] = None) -> None:
        a = self.args
        self.classification_heads[name] = ClassificationHead(
            a.encoder_embed_dim,
            inner_dim or a.classifier_inner_dim or a.encoder_embed_dim,
            num_classes,
            a.pooling,
            a.classifier_activation_fn,
            a.pooler_dropout,
        )

    def forward(
        self,
        src_tokens: Tensor,
        src_lengths: Optional[Tensor] = None,
        features_only: bool = True,
        classification_head_name: Optional[str] = None,
    ) -> Tuple[Tensor, Dict[str, Dict[str, List[Tensor]]]]:
        """-> (logits ``(B, classes)``, extra), or (the top layer's states ``(T, B,
        C)``, extra) when no head is named.  ``features_only`` is accepted for
        ``sentence_prediction``'s criterion; the logits are always sentence-level."""
        out = self.encoder(src_tokens, src_lengths)
        x = out["encoder_out"][0]  # (T, B, C), after the final layer norm when pre-norm
        padding_mask = src_tokens.eq(self.encoder.padding_idx)  # (B, T)
        cls_index = (~padding_mask).int().argmax(dim=1)  # the first real token of each row
        first = src_tokens.gather(1, cls_index.unsqueeze(1)).squeeze(1)
        if not bool((first == self.encoder.dictionary.bos()).all()):
            raise ValueError(
                "mixer_classifier reads the [CLS] node at each sentence's first token: run "
                "sentence_prediction with --init-token 0 (the dictionary's <s>)"
            )
        extra = {"encoder_out": out}
        if classification_head_name is None:
            return x, extra
        head = self.classification_heads[classification_head_name]
        return head(head.features(x, padding_mask if padding_mask.any() else None, cls_index)), extra

    def max_positions(self) -> int:
        return self.encoder.max_positions()

    def mixer_summary(self) -> List[str]:
        """One line per layer: its mixer, and the MS-Transformer form where used (logged at build)."""
        return [
            f"encoder.{i}: self={layer.mixer.describe()}"
            + (" layer=ms (eq. 10, no FFN)" if isinstance(layer, MSEncoderLayer) else "")
            for i, layer in enumerate(self.encoder.layers)
        ]


# --------------------------------------------------------------- architectures
@register_model_architecture("mixer_classifier", "mixer_classifier")
def classifier_base_architecture(args: argparse.Namespace) -> None:
    set_defaults(args, pooling="concat", classifier_activation_fn="relu", classifier_inner_dim=None)
    mixer_base_architecture(args)
    set_defaults(args, pooler_dropout=args.dropout)


def _cls_arch(name: str, **defaults) -> None:
    def arch(args: argparse.Namespace) -> None:
        set_defaults(args, **defaults)
        classifier_base_architecture(args)

    register_model_architecture("mixer_classifier", name)(arch)


# The paper's text-classification size (Table 1, SST / MTL-16): hidden 300, head
# width 30 (10 heads), alpha 0.5 over the candidates 1, 3, N/16, N/8, N/4.  Three
# layers, as in its Table 6 (SNLI); eq. (11)-(12) then give exactly the worked
# example {5,2,2,1,0}, {4,2,2,1,1}, {2,2,2,2,2}.
PAPER_SIZE = dict(encoder_embed_dim=300, encoder_attention_heads=10, encoder_layers=3)
_cls_arch(
    "mixer_cls_ms", **PAPER_SIZE, encoder_layer_form="ms", encoder_mixers=schedule_specs(0.5, 3, PAPER_SCALES, 10)
)
# the vanilla Transformer of the same width, heads and depth, with the usual 4d FFN
_cls_arch("mixer_cls_transformer", **PAPER_SIZE, encoder_ffn_embed_dim=1200)
