"""Subword models: subword-nmt BPE and sentencepiece learned on the training text, applied to
every split, and undone on the model's output."""

import io
import re
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

from ..files import atomic_path
from .pool import chunks, pool_map
from .text import open_text
from .workspace import PrepError

_BPE = {}


def _bpe_chunk(job: Tuple[str, Sequence[str]]) -> List[str]:
    codes, lines = job
    if codes not in _BPE:
        from subword_nmt.apply_bpe import BPE

        with open(codes, encoding="utf-8") as f:
            _BPE[codes] = BPE(f)
    bpe = _BPE[codes]
    return [bpe.process_line(line) for line in lines]


def learn_bpe(train_files: Sequence[Path], merges: int, codes: Path) -> None:
    from subword_nmt.learn_bpe import learn_bpe as _learn

    parts = []
    for f in train_files:  # joint: all files at once
        with open_text(f) as fh:
            parts.append(fh.read())
    text = "".join(parts)
    with atomic_path(codes) as tmp, open(tmp, "w", encoding="utf-8") as out:
        _learn(io.StringIO(text), out, merges, min_frequency=2)


def apply_bpe(lines: Sequence[str], codes: Path, workers: int = 1) -> List[str]:
    parts = pool_map(_bpe_chunk, [(str(codes), c) for c in chunks(lines)], workers)
    return [line for part in parts for line in part]


def learn_spm(train_files: Sequence[Path], vocab: int, prefix: Path, model_type: str = "bpe", workers: int = 1) -> None:
    """Writes ``<prefix>.model`` and ``<prefix>.vocab`` (callers write into a temporary folder)."""
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        input=[str(f) for f in train_files],
        model_prefix=str(prefix),
        vocab_size=vocab,
        model_type=model_type,
        character_coverage=1.0,
        input_sentence_size=10_000_000,
        shuffle_input_sentence=True,
        num_threads=workers,
        hard_vocab_limit=False,
        bos_id=-1,
        eos_id=-1,
        pad_id=-1,
        unk_id=0,  # fairseq adds its own specials
        minloglevel=2,
    )


def apply_spm(lines: Sequence[str], model: Path) -> List[str]:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(model))
    return [" ".join(p) for p in sp.encode(list(lines), out_type=str)]


def decode_subword(lines: Iterable[str], kind: str, model: Optional[Path]) -> List[str]:
    """Undo BPE (``@@ `` joins) or sentencepiece (pieces -> text)."""
    if kind == "bpe":
        return [re.sub(r"@@( |$)", "", line).strip() for line in lines]
    if kind == "spm":
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=str(model))
        return [sp.decode_pieces(line.split()) for line in lines]
    if kind == "none":
        return list(lines)
    raise PrepError(f"unknown subword kind {kind!r}")
