"""Named architectures: one module per paper (its citation, its table of rows, how it ran
its datasets), all registered here.

Each architecture only sets defaults, so every flag can still be overridden on the
command line (fairseq's convention: a value the user gave always wins).  A table
maps ``--arch`` name -> :class:`Arch` (base, defaults, the paper rows it stands
for, datasets); a *base* is a function that fills in the model size.  Parameter
tables, configs and results tables read :data:`ARCHITECTURES` and :data:`PAPERS`,
so a new paper module is picked up everywhere.
"""

import argparse
import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable, Dict, NamedTuple, Optional, Tuple

from fairseq.models import register_model_architecture
from fairseq.models.transformer import base_architecture

MODEL = "mixer_transformer"


@dataclass(frozen=True)
class Paper:
    """Everything about one paper that is not a row of its table: how to cite it, and how it
    ran the datasets where it departs from their shared recipe (``experiments.paper_rows``)."""

    key: str  # its table's name: configs/<key>/, a key of PAPERS
    authors: str  # "Loem et al. 2022"
    title: str
    cite: str  # arXiv / ACL Anthology id (or DOI where the paper has neither)
    doc: str  # this repository's page on it
    # dataset -> the mixer-prepare flags of the paper's own preprocessing of it
    prepare: Dict[str, str] = field(default_factory=dict)
    # dataset -> what its rows do there other than the dataset's recipe: any of generate (flags),
    # average_last, score, note, share (the embedding-sharing flags, "" for separate vocabularies)
    recipes: Dict[str, dict] = field(default_factory=dict)
    # (arch, dataset) -> {model: (paper row, overrides)}: rows that decode another row's checkpoints
    decodes: Dict[Tuple[str, str], Dict[str, Tuple[str, dict]]] = field(default_factory=dict)
    # (arch, dataset) -> paper row: a row on a dataset its arch does not list (an appendix's)
    extra_rows: Dict[Tuple[str, str], str] = field(default_factory=dict)


PAPERS: Dict[str, Paper] = {}  # filled by each table's register_table


class Row(NamedTuple):
    """One row of a paper's table (or one curve of a figure) that an arch stands for."""

    table: str  # "T1", "T2", "Fig. 3"
    name: str  # the row's label in the paper
    params: Optional[float] = None  # the paper's parameter count, millions
    scores: Tuple[Tuple[str, float], ...] = ()  # (what, value): ("WMT16 en-de BLEU", 27.15)

    def describe(self) -> str:
        figures = ([f"{self.params:g}M"] if self.params else []) + [
            f"{what} {value:.2f}" for what, value in self.scores
        ]
        return f"{self.table} {self.name}" + (f" ({', '.join(figures)})" if figures else "")


class Arch(NamedTuple):
    base: str  # a key of BASES
    defaults: dict  # flag dest -> value, applied before the base's defaults
    rows: Tuple[Row, ...] = ()  # the paper rows it stands for; () when it is in no paper
    # the data recipes (mixer-prepare NAME) of the datasets those rows report
    data: Tuple[str, ...] = ()
    note: str = ""  # what it is, for an arch in no paper (CPU sizes, extensions)
    reading: str = ""  # where the paper is ambiguous: the reading it uses, with equation numbers
    paper: str = ""  # the paper whose table it is in (a key of PAPERS; "" for none); set by register_table

    @property
    def paper_params(self) -> Optional[float]:
        return next((r.params for r in self.rows if r.params), None)

    def describe(self) -> str:
        """The paper rows it stands for, or its note."""
        return "; ".join(r.describe() for r in self.rows) or self.note


class Base(NamedTuple):
    fn: Callable
    vocab: int  # the paper's joint vocabulary, for parameter counts


BASES: Dict[str, Base] = {}
ARCHITECTURES: Dict[str, Arch] = {}


def set_defaults(args: argparse.Namespace, **defaults) -> None:
    """fairseq's arch convention: a value the user gave always wins."""
    for key, value in defaults.items():
        setattr(args, key, getattr(args, key, value))


def mixer_base_architecture(args: argparse.Namespace) -> None:
    set_defaults(args, encoder_mixers="attn", decoder_mixers="attn", decoder_cross_mixers="attn")
    base_architecture(args)


def register_base(
    name: str, vocab: int
) -> Callable[[Callable[[argparse.Namespace], None]], Callable[[argparse.Namespace], None]]:
    """Decorator: a base size, also registered as an ``--arch`` of its own."""

    def deco(fn: Callable[[argparse.Namespace], None]) -> Callable[[argparse.Namespace], None]:
        if name in BASES:
            raise ValueError(f"architecture base {name!r} is registered twice")
        BASES[name] = Base(fn, vocab)
        register_model_architecture(MODEL, name)(fn)
        return fn

    return deco


def _make_arch(base: str, defaults: dict) -> Callable[[argparse.Namespace], None]:
    def arch(args: argparse.Namespace) -> None:
        set_defaults(args, **defaults)
        BASES[base].fn(args)

    return arch


def register_table(table: Dict[str, Arch], paper: Optional[Paper] = None) -> None:
    """Register a paper's table (or, without ``paper``, architectures that are in no paper)."""
    if paper is not None:
        if paper.key in PAPERS:
            raise ValueError(f"paper {paper.key!r} is registered twice")
        PAPERS[paper.key] = paper
    for name, arch in table.items():
        if name in ARCHITECTURES:
            raise ValueError(f"architecture {name!r} is registered twice")
        if arch.base not in BASES:
            raise ValueError(f"architecture {name!r}: unknown base {arch.base!r}")
        ARCHITECTURES[name] = arch = arch._replace(paper=paper.key if paper else "")
        register_model_architecture(MODEL, name)(_make_arch(arch.base, arch.defaults))


def layers(enc: int, dec: int) -> dict:
    return dict(encoder_layers=enc, decoder_layers=dec)


def both(spec: str, enc_spec: Optional[str] = None) -> dict:
    """The same mixer in encoder and decoder self-attention (``enc_spec`` if the
    encoder's differs, e.g. encoder-only options)."""
    return dict(encoder_mixers=enc_spec or spec, decoder_mixers=spec)


register_model_architecture(MODEL, MODEL)(mixer_base_architecture)

# the base sizes first (bases.py), then every paper's table
importlib.import_module(f"{__name__}.bases")
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _module != "bases" and not _module.startswith("_"):
        importlib.import_module(f"{__name__}.{_module}")
