"""Multi-scale self-attention (Guo et al. 2020, "Multi-Scale Self-Attention for Text
Classification", arXiv:1912.00544) in the seq2seq model.

The paper has no translation rows: these carry its mixer to NMT at the IWSLT and
WMT sizes.  Heads per scale per layer follow eq. (11)-(12) with the paper's
alpha = 0.5 and its classification candidates 1, 3, N/16, N/8, N/4 (Table 1), as
explicit per-layer lists (``--encoder-layers`` must stay the table's depth, which
the spec list enforces).  ``_fixed`` rows use the paper's sequence-labelling
candidates 1, 3, 5, 7, 9 with alpha = 1.0 (Table 1), so the decoder's incremental
state is bounded; ``_mstrans`` rows use the MS-Transformer layer of eq. (10) (no
FFN) in the encoder.  The text-classification models of the paper itself are
``mixer_cls_*`` in ``models/mixer_classifier.py``.
"""

from typing import Tuple

from ...mixers.multiscale import PAPER_SCALES, schedule_specs
from . import Arch, Paper, register_table

LABELLING_SCALES = "1+3+5+7+9"
IWSLT, WMT, DEBIAN = ("iwslt14_de_en",), ("wmt16_en_de",), ("debian_en_de",)


def ms(heads: int, layers: int = 6, scales: str = PAPER_SCALES, alpha: float = 0.5) -> str:
    return schedule_specs(alpha, layers, scales, heads)


def rows(prefix: str, base: str, heads: int, data: Tuple[str, ...]) -> dict:
    size = f"{base} size ({heads} heads)"
    enc, fixed = ms(heads), ms(heads, scales=LABELLING_SCALES, alpha=1.0)
    return {
        f"{prefix}_ms_enc": Arch(
            base,
            {"encoder_mixers": enc},
            (),
            data,
            note=f"not in the paper: MSMSA encoder (alpha 0.5, scales {PAPER_SCALES}), {size}",
        ),
        f"{prefix}_ms": Arch(
            base,
            {"encoder_mixers": enc, "decoder_mixers": enc},
            (),
            data,
            note=f"not in the paper: MSMSA encoder and decoder (decoder ratios of the prefix), {size}",
        ),
        f"{prefix}_ms_fixed": Arch(
            base,
            {"encoder_mixers": fixed, "decoder_mixers": fixed},
            (),
            data,
            note=f"not in the paper: MSMSA enc+dec, fixed scales {LABELLING_SCALES}, alpha 1.0 "
            f"(bounded decoder cache), {size}",
        ),
        f"{prefix}_mstrans_enc": Arch(
            base,
            {"encoder_mixers": enc, "encoder_layer_form": "ms"},
            (),
            data,
            note=f"not in the paper: MS-Transformer encoder (eq. 10, no FFN), stock decoder, {size}",
        ),
    }


TABLE = {
    **rows("mixer_iwslt", "mixer_iwslt", 4, IWSLT),
    **rows("mixer_wmt", "mixer_wmt", 8, WMT),
    # ---- CPU-sized (2+2 layers, d=256, 4 heads) for the bundled EN-DE sample
    "mixer_small_ms": Arch(
        "mixer_small",
        {"encoder_mixers": ms(4, layers=2), "decoder_mixers": ms(4, layers=2)},
        (),
        DEBIAN,
        note="CPU size: MSMSA encoder and decoder (alpha 0.5, paper scales)",
    ),
}

PAPER = Paper(
    "multiscale",
    "Guo et al. 2020",
    "Multi-Scale Self-Attention for Text Classification",
    "arXiv:1912.00544",
    "docs/multiscale.md",
)
register_table(TABLE, PAPER)
