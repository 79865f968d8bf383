"""What a researcher checks before adopting the package: a licence, a citation, a changelog,
and one version that all three and the package agree on."""

import re
from pathlib import Path

import yaml

import mixer_plugin

REPO = Path(__file__).resolve().parents[1]


def test_one_version_everywhere():
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    newest = re.search(r"^## (?!Unreleased)(\S+)", (REPO / "CHANGELOG.md").read_text(encoding="utf-8"), re.M).group(1)
    assert str(cff["version"]) == newest == mixer_plugin.__version__


def test_licence_and_citation_are_in_the_readme():
    assert (REPO / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["license"] == "MIT" and cff["cff-version"] == "1.2.0" and cff["authors"]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "[MIT](LICENSE)" in readme and "CITATION.cff" in readme
