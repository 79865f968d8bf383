"""The hard retrieval attention paper's rows (Xu et al. 2021, "Learning Hard Retrieval
Decoder Attention for Transformers", ACL Anthology 2021.findings-emnlp.67).

Table 1: Transformer Base / Big with hard decoder attention (self + cross) on WMT14
En-De and En-Fr; Table 3: which sub-layers are hard (decoding speed ablation);
Table 4: train/decode switches (spec options ``train=`` / ``decode=``, flipped at
generate time with ``--model-overrides``: see the README); Table 5: WMT17 pairs,
Transformer Base vs hard decoder attention.  Plus CPU-sized rows for the bundled
EN-DE sample.
"""

from . import Arch, Paper, Row, register_table

WMT14 = ("wmt16_en_de", "wmt14_en_fr")  # Ott et al.'s WMT16 en-de = WMT14 en-de, newstest2014
WMT17 = tuple(f"wmt17_{a}_{b}" for x in ("de", "fi", "lv", "ru", "tr", "cs") for a, b in (("en", x), (x, "en")))
DEBIAN = ("debian_en_de",)

CROSS = {"decoder_cross_mixers": "hard"}
DEC = {"decoder_mixers": "hard", "decoder_cross_mixers": "hard"}
ALL = {"encoder_mixers": "hard", **DEC}


def row(table: str, name: str, **scores) -> Row:
    return Row(table, name, None, tuple(scores.items()))


T1 = lambda name, de, fr: row("T1", name, **{"WMT14 en-de BLEU": de, "WMT14 en-fr BLEU": fr})  # noqa: E731
T3 = lambda name, bleu, speedup: row("T3", name, **{"BLEU": bleu, "decoding speed-up": speedup})  # noqa: E731

TABLE = {
    "mixer_wmt_hard_none": Arch(
        "mixer_wmt",
        {},
        (T1("Transformer Base", 27.55, 39.54), T3("None (150.15 sent/s)", 27.55, 1.0), row("T5", "Std")),
        WMT14 + WMT17,
    ),
    "mixer_wmt_hard_cross": Arch("mixer_wmt", CROSS, (T3("Dec Cross-Attn", 27.59, 1.25),), WMT14[:1]),
    "mixer_wmt_hard_dec": Arch(
        "mixer_wmt",
        DEC,
        (
            T1("Base with Hard Dec Attn", 27.73, 39.39),
            T3("Dec Cross- and Self-Attn", 27.73, 1.43),
            row("T4", "train Hard / decode Hard", BLEU=27.73),
            row("T5", "Hard"),
        ),
        WMT14 + WMT17,
    ),
    "mixer_wmt_hard_all": Arch(
        "mixer_wmt", ALL, (T3("Enc Self- and Dec Cross- and Self-Attn", 26.60, 1.46),), WMT14[:1]
    ),
    "mixer_wmt_big_attn": Arch("mixer_wmt_big", {}, (T1("Transformer Big", 28.63, 41.52),), WMT14),
    "mixer_wmt_big_hard_dec": Arch("mixer_wmt_big", DEC, (T1("Big with Hard Dec Attn", 28.42, 41.81),), WMT14),
    # ---- CPU-sized (2+2 layers, d=256) for the bundled sample: quality and speed runs
    "mixer_small_hard_cross": Arch("mixer_small", CROSS, (), DEBIAN, note="CPU size: hard decoder cross-attention"),
    "mixer_small_hard_dec": Arch("mixer_small", DEC, (), DEBIAN, note="CPU size: hard decoder self + cross"),
    "mixer_small_hard_all": Arch("mixer_small", ALL, (), DEBIAN, note="CPU size: hard everywhere"),
}

PAPER = Paper(
    "hard_retrieval",
    "Xu et al. 2021",
    "Learning Hard Retrieval Decoder Attention for Transformers",
    "ACL Anthology 2021.findings-emnlp.67, arXiv:2009.14658",
    "docs/hard_retrieval.md",
    # WMT14 En-De with its own BPE, validated on newstest2012 and 2013 (§4)
    prepare={"wmt16_en_de": "--variant raw --valid newstest2012,newstest2013"},
    # Table 4: a converged model decoded with the other attention, without retraining
    decodes={
        ("mixer_wmt_hard_none", "wmt16_en_de"): {
            "decode_hard": (
                "T4 train Soft / decode Hard (BLEU 26.30)",
                {"decoder_mixers": "hard", "decoder_cross_mixers": "hard"},
            )
        },
        ("mixer_wmt_hard_dec", "wmt16_en_de"): {
            "decode_soft": (
                "T4 train Hard / decode Soft (BLEU 27.80)",
                {"decoder_mixers": "hard:decode=soft", "decoder_cross_mixers": "hard:decode=soft"},
            )
        },
    },
)
register_table(TABLE, PAPER)
