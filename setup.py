# The package's metadata and entry points are in pyproject.toml; this file stays so that
# older pip and `python setup.py develop` find the layout.
from setuptools import setup

setup()
