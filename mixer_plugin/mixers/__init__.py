"""Token mixers, one file each behind one interface, and their registry; a new mixer is one file
here with one ``@register_mixer``.

Every module of this package is imported here, so registering a mixer never means editing a
shared list.  The modules the mixers share are skipped by name (``_SHARED``): the registry,
the kernels, the bases (``base``: ``MixerBase``; ``attention_base``: ``AttentionMixer``;
``window_base``: ``WindowMixer``) and the in-place decoder cache ``AttentionMixer`` keeps
(``row_cache``).  They register nothing, so importing them would be harmless but pointless:
each mixer file imports the ones it needs.  A new shared module joins ``_SHARED``."""

import importlib
import pkgutil

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

_SHARED = {"registry", "kernels", "base", "attention_base", "window_base", "row_cache"}
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _module not in _SHARED and not _module.startswith("_"):
        importlib.import_module(f"{__name__}.{_module}")  # registration side effects
