"""mixer-plugin: token mixers that replace self-/cross-attention in fairseq.

Use with stock fairseq: ``fairseq-train ... --user-dir mixer_plugin --arch <name>``.
Importing the package registers the ``mixer_transformer`` model, its named
architectures and the mixers, and applies the stack fixes in :mod:`.compat`.
"""

from . import compat

compat.apply()

from . import mixers, models  # noqa: E402,F401  (registration side effects)

__version__ = "0.5.0"  # CHANGELOG.md says what each version holds
