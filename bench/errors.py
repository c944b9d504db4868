"""The exceptions the command line prints as one line: bad input (``BenchError``, exit 2) and faults of
the machine bench runs on (``EnvironmentFault``, exit 3), and how an OS, SQLite or safetensors failure
is told to be one of the latter."""

from __future__ import annotations

import errno
import os
import re
import shutil
from pathlib import Path

import numpy as np

from bench.formatting import size


class BenchError(Exception):
    """Bad input or configuration. The message names where (file:line) and how to fix it."""


class PartialEmbeddingError(BenchError):
    """An ``embed`` call failed after some of its batches were answered (and billed).

    ``positions`` are the input rows that did come back and ``vectors`` their normalised rows, so
    a caller such as the cache can keep them before passing the error on; the message is the
    failure's own one line.
    """

    def __init__(self, message: str, positions: np.ndarray, vectors: np.ndarray) -> None:
        super().__init__(message)
        self.positions = positions
        self.vectors = vectors


class EnvironmentFault(BenchError):
    """The machine refused, not the input: a full disk, a missing permission, a filesystem without a
    feature bench needs, a process limit. The message names the path and what to change.

    ``path`` and, for an OS error, its ``code``, the bytes ``needed`` and what the filesystem was
    asked (``doing``) are kept, so that a caller that knows whose folder it was can name the option
    that moves it (``elsewhere``).
    """

    def __init__(
        self,
        message: str,
        path: str | Path | None = None,
        code: int | None = None,
        *,
        needed: int | None = None,
        doing: str | None = None,
    ) -> None:
        super().__init__(message)
        self.path, self.code, self.needed, self.doing = path, code, needed, doing

    def elsewhere(self, switch: str) -> EnvironmentFault:
        """The same fault, naming ``switch`` (e.g. ``RESULTS_ELSEWHERE``) as the way to write elsewhere."""
        if self.code is None or switch in str(self):
            return self
        return os_fault(self.code, self.path, self.needed, switch, self.doing)


RESULTS_ELSEWHERE = "--results DIR writes runs elsewhere"
CACHE_ELSEWHERE = "--cache-dir DIR or $BENCH_CACHE_DIR moves the cache"

_EDQUOT = getattr(errno, "EDQUOT", -1)
# What a network, FUSE or other unusual filesystem answers for a feature it lacks (locks, renaming
# over a name). EINVAL means that only where bench asked for exactly such a feature.
UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.ENOLCK})
# Errors of the machine rather than of bench or its input, wherever they are raised.
MACHINE = frozenset(
    {
        errno.ENOSPC,
        _EDQUOT,
        errno.EFBIG,
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.EMFILE,
        errno.ENFILE,
        errno.EXDEV,
        errno.EIO,
        *UNSUPPORTED - {errno.EINVAL},
    }
)


def os_fault(
    code: int,
    path: str | Path | None = None,
    needed: int | None = None,
    switch: str | None = None,
    doing: str | None = None,
) -> EnvironmentFault:
    """The one line for an OS error ``code`` on ``path``: what happened and what to do. ``needed`` is
    the bytes the step was writing; ``doing`` what the filesystem was asked and lacks."""
    at = f"{path}: " if path else ""
    also = f" ({switch})" if switch else ""
    if code in (errno.ENOSPC, _EDQUOT):
        full = code == errno.ENOSPC
        mount = _mount_point(path)
        free = _free_bytes(mount) if full and needed else None  # only beside the need: alone it misleads
        room = [f"needed {size(needed)}"] if needed else []
        if free is not None:
            room.append(f"{size(free)} free")
        figures = f" ({', '.join(room)})" if room else ""
        message = (
            f"{'no space left' if full else 'disk quota exceeded'} on {mount or 'the disk'} for {path or 'a file'}"
            f"{figures}; free space {'there' if full else 'within your quota'}{also}"
        )
    elif code == errno.EFBIG:
        message = f"{at}a file too large for its filesystem; choose a folder on another filesystem{also}"
    elif code in (errno.EACCES, errno.EPERM):
        message = f"{at}permission denied; fix the permissions of it or its folder for this user{also}"
    elif code == errno.EROFS:
        message = f"{at}the filesystem is read-only; choose a writable folder{also}"
    elif code == errno.EMFILE:
        message = f"too many open files{' (at ' + str(path) + ')' if path else ''}; {_raise_open_files()}"
    elif code == errno.ENFILE:
        message = (
            f"the system's table of open files is full{' (at ' + str(path) + ')' if path else ''}; "
            "close other programs or raise the system's limit (fs.file-max), and rerun"
        )
    elif code == errno.EXDEV:
        message = f"{at}cannot move a file across filesystems; keep the folder on one filesystem{also}"
    elif code == errno.EIO:
        message = f"{at}input/output error (a failing disk or network filesystem); check the disk{also}"
    elif code in UNSUPPORTED:
        message = (
            f"{at}the filesystem does not support {doing or 'an operation bench needs'}; "
            f"use a folder on a local disk{also}"
        )
    else:
        message = f"{at}{os.strerror(code)}{also}"
    return EnvironmentFault(message, path, code, needed=needed, doing=doing)


def fault_of(
    exc: BaseException,
    path: str | Path | None = None,
    needed: int | None = None,
    switch: str | None = None,
    doing: str | None = None,
    codes: frozenset[int] = MACHINE,
) -> EnvironmentFault | None:
    """The EnvironmentFault an exception (or one it was raised from) means, else None. ``path``, when
    given, is named in place of the exception's own file name (a temporary file's, say); ``codes``
    are the errnos taken for the machine's."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, EnvironmentFault):
            return seen.elsewhere(switch) if switch else seen
        code = _errno(seen)
        if code is not None and code in codes:
            return os_fault(code, path if path is not None else getattr(seen, "filename", None), needed, switch, doing)
        sqlite = _sqlite_fault(seen, path, switch)
        if sqlite is not None:
            return sqlite
        seen = seen.__cause__ if seen.__cause__ is not None or seen.__suppress_context__ else seen.__context__
    return None


def _errno(exc: BaseException) -> int | None:
    if isinstance(exc, OSError):
        return exc.errno
    if type(exc).__name__ == "SafetensorError":  # a Rust I/O error, as text: "... (os error 28)"
        found = re.search(r"os error (\d+)", str(exc))
        return int(found.group(1)) if found else None
    return None


def _sqlite_fault(exc: BaseException, path: str | Path | None, switch: str | None) -> EnvironmentFault | None:
    """SQLite's result codes for a full disk, a file it may not write, a lock held too long, a file
    it cannot open and I/O failures; None for anything else (a bug, a damaged file)."""
    if type(exc).__module__ != "sqlite3":
        return None
    name = getattr(exc, "sqlite_errorname", "") or ""
    what = path or "the embedding cache's database"
    also = f" ({switch})" if switch else ""
    if name == "SQLITE_FULL" or "disk is full" in str(exc):
        return os_fault(errno.ENOSPC, path, None, switch)
    if name.startswith("SQLITE_READONLY") or name == "SQLITE_CANTOPEN" or "readonly database" in str(exc):
        verb = "cannot be written" if path is not None and Path(path).exists() else "cannot be created"
        message = f"{what}: {verb}: {_unwritable(path)}{also}"
    elif name in ("SQLITE_BUSY", "SQLITE_LOCKED") or "database is locked" in str(exc):
        message = f"{what}: locked by another process for minutes; let the other bench run finish{also}"
    elif name == "SQLITE_IOERR_SHMSIZE" or (name.startswith("SQLITE_IOERR") and _nearly_full(path)):
        return os_fault(errno.ENOSPC, path, None, switch)  # growing a file failed: SQLite keeps the errno to itself
    elif name in ("SQLITE_IOERR_LOCK", "SQLITE_IOERR_SHMLOCK", "SQLITE_IOERR_SHMMAP"):
        message = (
            f"{what}: the filesystem does not support the locks and shared memory SQLite needs (a network "
            f"filesystem?); use a folder on a local disk{also}"
        )
    elif name.startswith("SQLITE_IOERR"):
        return os_fault(errno.EIO, what, None, switch)
    else:
        return None
    return EnvironmentFault(message, what)


def _unwritable(path: str | Path | None) -> str:
    """Why a file SQLite may not write is so, as far as the folder tells, and what to do."""
    folder = Path(os.path.abspath(path)).parent if path is not None else None
    while folder is not None and not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if folder is not None and hasattr(os, "statvfs") and os.statvfs(folder).f_flag & os.ST_RDONLY:
        return "the filesystem is read-only; choose a writable folder"
    if folder is not None and not os.access(folder, os.W_OK):
        return "its folder is not writable for this user; fix its permissions"
    return "no write permission, or too many open files; check its permissions and `ulimit -n`"


def _mount_point(path: str | Path | None) -> Path | None:
    """The mount point of the filesystem that holds (or would hold) ``path``."""
    if path is None:
        return None
    here = Path(os.path.abspath(path))
    while not here.exists() and here != here.parent:
        here = here.parent
    while not os.path.ismount(here) and here != here.parent:
        here = here.parent
    return here


def _nearly_full(path: str | Path | None) -> bool:
    """Under 1 MiB free where ``path`` is: where an I/O error most likely means a full disk."""
    free = _free_bytes(_mount_point(path))
    return free is not None and free < 1 << 20


def _free_bytes(mount: Path | None) -> int | None:
    try:
        return shutil.disk_usage(mount).free if mount is not None else None
    except OSError:
        return None


def _raise_open_files() -> str:
    """What to do about the open-files limit, with this process's figures where the OS tells them."""
    try:
        import resource
    except ImportError:  # Windows: no such per-process limit to raise
        return "close other programs and rerun"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max(4096, soft * 4)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    if wanted <= soft:
        return f"this process may open {soft}, its hard limit; raise that (`ulimit -Hn` as root, or limits.conf)"
    return f"this process may open {soft}; raise the limit, e.g. `ulimit -n {wanted}`, and rerun"
