"""``python -m mixer_plugin``: the folder to give fairseq as ``--user-dir``, wherever the plugin
is installed (a checkout, a virtualenv, a user's site-packages)::

    fairseq-train DATA --user-dir "$(python -m mixer_plugin)" --arch mixer_small_attn ...

``python -m mixer_plugin --version`` prints the plugin's version.
"""

import sys
from typing import List, Optional

from . import __version__
from .paths import PLUGIN


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(PLUGIN)
        return 0
    if argv == ["--version"]:
        print(__version__)
        return 0
    print(
        f"usage: python -m mixer_plugin [--version]  (prints the --user-dir path; got {' '.join(argv)!r})",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
