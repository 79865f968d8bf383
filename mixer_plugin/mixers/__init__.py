"""Token mixers.  A new mixer is one file here plus one ``@register_mixer``."""

from .registry import (  # noqa: F401
    ALL_ROLES,
    MIXER_REGISTRY,
    SELF_ROLES,
    LayerMixer,
    MixerContext,
    MixerSpecError,
    Role,
    build_mixer,
    parse_mixer_list,
    register_mixer,
    resolve_layers,
)
from . import attn, local, ngram  # noqa: F401,E402  (registration side effects)
