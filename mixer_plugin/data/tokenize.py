"""The Moses scripts' steps, with sacremoses: punctuation normalisation and tokenisation (and
their undoing), clean-corpus-n's length cleaning of training pairs, and truecasing."""

import re
from pathlib import Path
from typing import Iterable, List, Sequence, Tuple

from ..files import atomic_path
from .pool import chunks, pool_map

_MOSES = {}


def _moses(lang: str):
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    if lang not in _MOSES:
        _MOSES[lang] = (
            MosesPunctNormalizer(lang=lang, pre_replace_unicode_punct=True, post_remove_control_chars=True),
            MosesTokenizer(lang=lang),
        )
    return _MOSES[lang]


def _tok_chunk(job: Tuple[str, Sequence[str], bool, bool, bool, bool]) -> List[str]:
    lang, lines, lowercase, escape, aggressive, normalize = job
    norm, tok = _moses(lang)
    out = []
    for line in lines:
        # normalize-punctuation + remove-non-printing-char (the WMT scripts; not
        # prepare-iwslt14.sh), then tokenizer -a (aggressive hyphen splitting: "a-b" ->
        # "a @-@ b", as the WMT scripts of fairseq/tensor2tensor)
        text = tok.tokenize(
            norm.normalize(line) if normalize else line,
            aggressive_dash_splits=aggressive,
            return_str=True,
            escape=escape,
        )
        text = " ".join(text.split())
        out.append(text.lower() if lowercase else text)
    return out


def moses_tokenize(
    lines: Sequence[str],
    lang: str,
    *,
    lowercase: bool = False,
    escape: bool = False,
    aggressive: bool = True,
    normalize: bool = True,
    workers: int = 1,
) -> List[str]:
    parts = pool_map(_tok_chunk, [(lang, c, lowercase, escape, aggressive, normalize) for c in chunks(lines)], workers)
    return [line for part in parts for line in part]


def moses_detokenize(lines: Sequence[str], lang: str) -> List[str]:
    from sacremoses import MosesDetokenizer

    detok = MosesDetokenizer(lang=lang)
    # undo the aggressive hyphen split first ("a @-@ b" -> "a-b")
    return [detok.detokenize(re.sub(r" (@-@|##AT##-##AT##) ", "-", line).split(), unescape=True) for line in lines]


def clean_pairs(src: List[str], tgt: List[str], min_len: int = 1, max_len: int = 250, ratio: float = 1.5) -> List[int]:
    """Indices of the pairs Moses' clean-corpus-n.perl keeps: both sides within
    [min_len, max_len] tokens and neither more than ``ratio`` times the other."""
    keep = []
    for i, (s, t) in enumerate(zip(src, tgt)):
        ls, lt = len(s.split()), len(t.split())
        if min_len <= ls <= max_len and min_len <= lt <= max_len and ls <= ratio * lt and lt <= ratio * ls:
            keep.append(i)
    return keep


def train_truecaser(lines: Sequence[str], model: Path) -> None:
    from sacremoses import MosesTruecaser

    tc = MosesTruecaser()
    tc.train([line.split() for line in lines], save_to=None)
    with atomic_path(model) as tmp:
        tc.save_model(str(tmp))


def truecase(lines: Sequence[str], model: Path) -> List[str]:
    from sacremoses import MosesTruecaser

    tc = MosesTruecaser(load_from=str(model))
    return [" ".join(tc.truecase(line, return_str=False)) if line.strip() else "" for line in lines]


def detruecase(lines: Iterable[str]) -> List[str]:
    """Moses detruecase.perl: the first word of a sentence capitalised again."""
    from sacremoses import MosesDetruecaser

    d = MosesDetruecaser()
    return [d.detruecase(line, return_str=True) for line in lines]
