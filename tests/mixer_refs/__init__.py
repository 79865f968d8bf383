"""Naive references for the registry battery, one module per mixer.

Each module ``<mixer>.py`` defines

    NAIVE = {"<mixer>": fn}         # fn(m, case, x, enc, pad) -> (T, B, C), a loop
                                    # written straight from the paper's equations
    READINGS = {"<mixer>": [(spec, roles or None), ...]}   # option readings to test
    ACTIVATIONS = {"<mixer>"}        # where the mixer has an activation of its own, which
                                    # --activation-dropout must reach (absent: none)

and is collected here, so adding a mixer never edits a shared test file.
``common.py`` holds helpers shared by several references."""

import importlib
import pkgutil

NAIVE = {}
READINGS = {}
ACTIVATIONS = set()

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name == "common":
        continue
    _mod = importlib.import_module(f"{__name__}.{_info.name}")
    for _name, _fn in getattr(_mod, "NAIVE", {}).items():
        assert _name not in NAIVE, f"two naive references for {_name}"
        NAIVE[_name] = _fn
    READINGS.update(getattr(_mod, "READINGS", {}))
    ACTIVATIONS.update(getattr(_mod, "ACTIVATIONS", set()))
