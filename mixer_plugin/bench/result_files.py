"""Where every benchmark's tables go (``RESULTS``) and how they are written: the markdown table
and the JSON it is rendered from, each written whole or not at all (``write_outputs``), and a
finished run's table rendered again from its JSON, timing nothing (``rerender``, ``--from-json``)."""

import argparse
import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from ..files import atomic_path
from ..paths import RESULTS as PROJECT_RESULTS

# where every benchmark writes its tables by default: results/bench/<name>_<device>[...].{md,json}
RESULTS = PROJECT_RESULTS / "bench"


def rerender(
    ap: argparse.ArgumentParser,
    args: argparse.Namespace,
    render: Callable[[Dict[str, Any], List[Dict[str, Any]]], str],
) -> Tuple[Dict[str, Any], List[Dict[str, Any]], str]:
    """A finished run's table re-rendered from its JSON (``--from-json``), nothing timed:
    for a change of presentation, so the committed figures stay the ones measured.
    ``render(meta, rows)`` is the benchmark's markdown; returns (meta, rows, md path)."""
    if not os.path.isfile(args.from_json):
        ap.error(f"--from-json: no such file {args.from_json}")
    payload = json.loads(Path(args.from_json).read_text())
    meta, rows = payload["meta"], payload["rows"]
    meta.setdefault("dtype", "float32")  # files written before --dtype existed were fp32
    md_path = args.md or str(Path(args.from_json).with_suffix(".md"))
    write_outputs(md_path, None, render(meta, rows), payload)
    return meta, rows, md_path


def write_outputs(
    md_path: Optional[Union[str, Path]], json_path: Optional[Union[str, Path]], md: str, payload: dict
) -> None:
    """The markdown table (printed instead when there is no path) and the raw JSON, each
    written whole or not at all (a benchmark killed while writing leaves the old table)."""
    if not md_path:
        print(md)
    for path, text in ((md_path, md if md.endswith("\n") else md + "\n"), (json_path, json.dumps(payload, indent=1))):
        if path:
            with atomic_path(Path(path)) as tmp:
                tmp.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
