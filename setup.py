"""The one compiled part of bench; everything else is declared in pyproject.toml.

The C reader of runs given as dicts (``bench.evaluate``) is optional: without a C compiler the install
goes on, and bench/evaluation/from_dicts.py reads the dicts with numpy instead (the same figures, slower).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("bench.evaluation._from_dicts", ["bench/evaluation/_from_dicts.c"], optional=True),
    ]
)
