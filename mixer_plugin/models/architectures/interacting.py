"""The interacting-head attention paper's grid (Li and Luo 2022, doi:10.1155/2022/2998242):
Tables 3-5 compare, per number of heads, the original multi-head attention (MHA), MHA
with a fixed head size (Bhojanapalli et al.), talking-heads attention (Shazeer et al.)
and interacting-head attention, on IWSLT16 DE-EN (T3), WMT17 EN-DE (T4) and WMT17
EN-CS (T5); Table 9 takes interacting-head attention from 32 to 64 heads on IWSLT16.

Sizes (§4.2): d_model 512, "hidden state for linear transformation" (FFN) 1024,
dropout 0.1, otherwise Vaswani et al.'s setting, i.e. 6+6 layers: the sizes of
fairseq's transformer_iwslt_de_en, registered here as base ``mixer_ihead`` with the
paper's IWSLT16 joint vocabulary (40k) for parameter counts (WMT17 EN-DE used 80k;
EN-CS separate vocabularies, so its rows need no --share-all-embeddings).
Each mixer fills all three attention roles (the paper replaces MHA everywhere; its
§4.6.2 discusses talking heads in the decoder's masked self-attention).

Heads: the paper's Table 2 (lost in extraction) lists the candidates; the text names
2-16, 32 and 64 (§4.6.5, §4.7).  d = 512 allows 4 .. 64 with d_k >= 8.  The fixed head
size is the mean training length n: 20 (IWSLT16), 25 (WMT17 EN-DE), 26 (WMT17 EN-CS)
(§4.1), so those rows are per dataset.  The pairwise reading costs H times MHA in the
output map and score maps, so it is listed only up to 16 heads.

CPU rows (``mixer_small_ihead_*``): the 2+2-layer, d=256 quickstart size at 8 and 16
heads, for experiments/interacting_heads.yaml on the Debian EN-DE corpus.
"""

import argparse
from typing import Tuple

from fairseq.models.transformer import transformer_iwslt_de_en

from . import Arch, Paper, Row, mixer_base_architecture, register_base, register_table

IWSLT16, WMT17_DE, WMT17_CS = "iwslt16_de_en", "wmt17_en_de", "wmt17_en_cs"
ALL_DATA = (IWSLT16, WMT17_DE, WMT17_CS)
MEAN_LENGTH = {IWSLT16: 20, WMT17_DE: 25, WMT17_CS: 26}  # §4.1: the fixed head size n
HEADS = (4, 8, 16, 32, 64)
PAIRWISE_HEADS = (4, 8, 16)
SMALL_HEADS = (8, 16)
SAMPLE = ("debian_en_de",)
# mean sentencepiece length of the Debian EN-DE training set (both sides, EOS not
# counted), from mixer-max-heads; see results/max_heads/debian_en_de.md
SAMPLE_MEAN_LENGTH = 21  # n = 20.29 (en 19.11, de 21.46) -> a head no narrower than n

MIXERS = {  # name in --arch -> (spec, paper's name)
    "mha": ("attn", "original multi-head attention"),
    "talking": ("talking_heads", "talking-head attention"),
    "interacting": ("interacting", "interacting-head attention (Alg. 1)"),
}


@register_base("mixer_ihead", vocab=40000)
def ihead_architecture(args: argparse.Namespace) -> None:
    """§4.2: d=512, FFN 1024, dropout 0.1, 6+6 layers (transformer_iwslt_de_en's sizes)."""
    transformer_iwslt_de_en(args)
    mixer_base_architecture(args)


def everywhere(spec: str, heads: int) -> dict:
    """One mixer in all three roles, with H heads on both sides."""
    return dict(
        encoder_mixers=spec,
        decoder_mixers=spec,
        decoder_cross_mixers=spec,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
    )


def row(H: int, name: str) -> Row:
    tables = "T3-T5" + (", T9" if H >= 32 else "")  # the paper's numbers were lost in extraction
    return Row(tables, f"{name}, {H} heads")


def data_for(heads: int) -> Tuple[str, ...]:
    return (IWSLT16,) if heads > 32 else ALL_DATA  # Table 9: 64 heads on IWSLT16 only


TABLE = {}
for H in HEADS:
    for key, (spec, what) in MIXERS.items():
        TABLE[f"mixer_ihead_{key}_h{H}"] = Arch("mixer_ihead", everywhere(spec, H), (row(H, what),), data_for(H))
    for data, n in MEAN_LENGTH.items():
        TABLE[f"mixer_ihead_fixed_n{n}_h{H}"] = Arch(
            "mixer_ihead",
            everywhere(f"fixed_head:head_dim={n}", H),
            (row(H, f"MHA with head size = mean length n={n} (Bhojanapalli et al.)"),),
            (data,),
        )
for H in PAIRWISE_HEADS:
    TABLE[f"mixer_ihead_pairwise_h{H}"] = Arch(
        "mixer_ihead",
        everywhere("interacting:reading=pairwise", H),
        (),
        ALL_DATA,
        note=f"interacting-head attention, pairwise reading (§3.3 sub-sub-outputs), {H} heads",
    )
# ---- CPU-sized rows for the bundled sample (2+2 layers, d=256)
for H in SMALL_HEADS:
    for key, (spec, what) in MIXERS.items():
        TABLE[f"mixer_small_ihead_{key}_h{H}"] = Arch(
            "mixer_small",
            everywhere(spec, H),
            (),
            SAMPLE,
            note=f"CPU size: {what}, {H} heads",
        )
    TABLE[f"mixer_small_ihead_fixed_h{H}"] = Arch(
        "mixer_small",
        everywhere(f"fixed_head:head_dim={SAMPLE_MEAN_LENGTH}", H),
        (),
        SAMPLE,
        note=f"CPU size: head size = sample mean length {SAMPLE_MEAN_LENGTH}, {H} heads",
    )
TABLE["mixer_small_ihead_pairwise_h8"] = Arch(
    "mixer_small",
    everywhere("interacting:reading=pairwise", 8),
    (),
    SAMPLE,
    note="CPU size: pairwise reading, 8 heads",
)

# §4.3: beam 4, batch 8, length penalty 0.6 on the WMT17 pairs it shares with other papers, the
# last checkpoint, and its metrics (multi-bleu, pyter, nlg-eval); EN-CS with separate vocabularies (§4.1)
METRICS = {"metrics": ["bleu", "chrf", "ter", "wer", "rougeL"], "tokenized": True}  # multi-bleu, pyter, nlg-eval
OWN_WMT17 = dict(
    generate="--beam 4 --lenpen 0.6 --batch-size 8",
    average_last=1,
    score=METRICS,
    note="§4.3 of the interacting-head paper: beam 4, batch 8, length penalty 0.6",
)
PAPER = Paper(
    "interacting",
    "Li and Luo 2022",
    "An Improved Transformer-Based Neural Machine Translation Strategy: Interacting-Head Attention",
    "doi:10.1155/2022/2998242, no arXiv version",
    "docs/interacting_heads.md",
    # Moses + truecase + sentencepiece BPE, 80k shared / separate for cs (§4.1)
    prepare={WMT17_DE: "--variant ihead", WMT17_CS: "--variant ihead"},
    recipes={WMT17_DE: OWN_WMT17, WMT17_CS: {**OWN_WMT17, "share": ""}},
)
register_table(TABLE, PAPER)
