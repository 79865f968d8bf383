"""Named architectures.  Each one only sets defaults; every flag can still be
overridden on the command line.

Paper rows (Loem et al., "Are Neighbors Enough?"): Table 1 (IWSLT14 de-en at
transformer_iwslt_de_en size, WMT16 en-de at transformer-base size), Table 2 (WMT
ablations), Table 3 (encoder/decoder combinations) and Figure 3 (multiNN in the
first k of 6 layers).  The README lists their parameter counts beside the paper's.
"""

from fairseq.models import register_model_architecture
from fairseq.models.transformer import base_architecture, transformer_iwslt_de_en

MODEL = "mixer_transformer"


def set_defaults(args, **defaults):
    """fairseq's arch convention: a value the user gave always wins."""
    for key, value in defaults.items():
        setattr(args, key, getattr(args, key, value))


def mixer_base_architecture(args):
    set_defaults(args, encoder_mixers="attn", decoder_mixers="attn", decoder_cross_mixers="attn")
    base_architecture(args)


register_model_architecture(MODEL, MODEL)(mixer_base_architecture)


def small_architecture(args):
    """2+2 layers, d=256: the CPU quickstart size (data/README's 5.7M baseline)."""
    set_defaults(
        args,
        encoder_embed_dim=256,
        encoder_ffn_embed_dim=1024,
        encoder_attention_heads=4,
        encoder_layers=2,
        decoder_layers=2,
    )
    set_defaults(
        args,
        decoder_embed_dim=args.encoder_embed_dim,
        decoder_ffn_embed_dim=args.encoder_ffn_embed_dim,
        decoder_attention_heads=args.encoder_attention_heads,
    )
    mixer_base_architecture(args)


def iwslt_architecture(args):
    transformer_iwslt_de_en(args)  # d=512, FFN 1024, 4 heads, 6+6
    mixer_base_architecture(args)


BASES = {
    "mixer_wmt": mixer_base_architecture,  # transformer-base: d=512, FFN 2048, 8 heads
    "mixer_iwslt": iwslt_architecture,
    "mixer_small": small_architecture,
}


def layers(enc: int, dec: int):
    return dict(encoder_layers=enc, decoder_layers=dec)


def both(spec: str, enc_spec: str = None):
    return dict(encoder_mixers=enc_spec or spec, decoder_mixers=spec)


MULTINN_ENC = "ngram:n=5:global=1"  # the paper's multiNN: n=5, encoder global context
MULTINN_DEC = "ngram:n=5"
INCREASING_N = "ngram:n=3*2,ngram:n=5*2,ngram:n=7*2,ngram:n=9*2"

# name -> (base, defaults, paper row)
ARCHITECTURES = {
    # ---- Table 1, IWSLT14 de-en
    "mixer_iwslt_attn": ("mixer_iwslt", {}, "T1 IWSLT self-attention (36M, 35.34)"),
    "mixer_iwslt_local": ("mixer_iwslt", both("local:n=5"), "T1 IWSLT local attention (36M, 34.77)"),
    "mixer_iwslt_multinn": (
        "mixer_iwslt",
        {**both(MULTINN_DEC, MULTINN_ENC), **layers(9, 9)},
        "T1 IWSLT multi-head NN, 9 layers (36M, 35.49)",
    ),
    # ---- Table 1 / Table 2, WMT16 en-de
    "mixer_wmt_attn": ("mixer_wmt", {}, "T1 WMT self-attention (61M, 27.20); T2 26.02"),
    "mixer_wmt_local": ("mixer_wmt", both("local:n=5"), "T1 WMT local attention (61M, 26.71); T2 25.50"),
    "mixer_wmt_multinn": (
        "mixer_wmt",
        {**both(MULTINN_DEC, MULTINN_ENC), **layers(8, 8)},
        "T1 WMT multi-head NN 8L (62M, 27.15); T2 26.00",
    ),
    "mixer_wmt_multinn_6l": (
        "mixer_wmt",
        both(MULTINN_DEC, MULTINN_ENC),
        "T2 multi-head NN 6L (62M, 25.69)",
    ),
    "mixer_wmt_multinn_1head": (
        "mixer_wmt",
        {**both(MULTINN_DEC + ":heads=1", MULTINN_ENC + ":heads=1"), **layers(8, 8)},
        "T2 - multi-head (62M, 25.33)",
    ),
    "mixer_wmt_sun_iyyer": (
        "mixer_wmt",
        {**both(MULTINN_DEC + ":heads=1:proj=none", MULTINN_ENC + ":heads=1:proj=none"), **layers(8, 8)},
        "T2 Sun and Iyyer (2021) (62M, 25.41)",
    ),
    "mixer_wmt_multinn_noglobal": (
        "mixer_wmt",
        {**both(MULTINN_DEC), **layers(8, 8)},
        "T2 - global (62M, 25.80)",
    ),
    "mixer_wmt_multinn_incn": (
        "mixer_wmt",
        {**both(INCREASING_N), **layers(8, 8)},
        "T2 - global + increasing n (62M, 26.11)",
    ),
    # ---- Table 3: encoder / decoder combinations (each side keeps its Table 1 depth)
    "mixer_wmt_enc_attn_dec_multinn": (
        "mixer_wmt",
        {"decoder_mixers": MULTINN_DEC, **layers(6, 8)},
        "T3 encoder SA + decoder multiNN (26.46)",
    ),
    "mixer_wmt_enc_multinn_dec_attn": (
        "mixer_wmt",
        {"encoder_mixers": MULTINN_ENC, **layers(8, 6)},
        "T3 encoder multiNN + decoder SA (25.95)",
    ),
    # ---- CPU quickstart
    "mixer_small_attn": ("mixer_small", {}, "quickstart baseline"),
    "mixer_small_hybrid": (
        "mixer_small",
        {"encoder_mixers": "ngram:global=1,attn", "decoder_mixers": "ngram,attn"},
        "quickstart multiNN hybrid (multiNN in layer 1, Fig. 3 style)",
    ),
}

# ---- Figure 3: multiNN without global context in the first k of 6 layers
for k in range(1, 7):
    ARCHITECTURES[f"mixer_wmt_layerwise_k{k}"] = (
        "mixer_wmt",
        both(f"ngram:n=5*{k}" + (f",attn*{6 - k}" if k < 6 else "")),
        f"Fig. 3, multiNN in the first {k} of 6 layers",
    )


def _make_arch(base, defaults):
    def arch(args):
        set_defaults(args, **defaults)
        BASES[base](args)

    return arch


for _name, _fn in BASES.items():
    register_model_architecture(MODEL, _name)(_fn)
for _name, (_base, _defaults, _row) in ARCHITECTURES.items():
    register_model_architecture(MODEL, _name)(_make_arch(_base, _defaults))
