"""Instructions valgrind's callgrind counts for one run of a Python script: the one copy the
benchmarks share (``instructions.py``, ``budget.py``, ``collection_get.py``)."""

from __future__ import annotations

import fcntl
import gc
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

#: The whole environment of a counted child (plus what a caller adds, e.g. ``PYTHONPATH``).
CHILD_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/nonexistent",
    "LANG": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    # A counted child never writes a bytecode cache: one that did (a module edited since the
    # last run) while its pair of the same tree read it would count a compile in one of the
    # two runs only (a -215,000 "per request" seen). :func:`prime` writes the caches first.
    "PYTHONDONTWRITEBYTECODE": "1",
}

#: The one directory every counted child runs from inside :func:`fixed_paths`, whatever the
#: checkout's path: the checkout's ``src`` and ``bench`` copied to ``tree/``, the running
#: environment's site-packages linked as ``site-packages``, every bytecode cache under
#: ``pycache/`` (``PYTHONPYCACHEPREFIX``). See :func:`fixed_paths` for why.
FIXED = Path("/tmp/svcrest-callgrind")
#: The checkout these scripts belong to.
CHECKOUT = Path(__file__).resolve().parent.parent
#: ``FIXED/<name>/src`` of each other svcrest that :func:`fixed_paths` copied (four letters
#: each, as ``tree``, so that every copy's path has the same length).
_ALTERNATIVES = ("alt1", "alt2", "alt3", "alt4", "alt5", "alt6", "alt7", "alt8", "alt9")

# Set while fixed_paths() holds the directory: collected() and prime() then run the children
# from it. A benchmark script's own process state (these scripts are not the library).
_fixed: list[bool] = []


@contextmanager
def fixed_paths(others: Sequence[str] = ()) -> Iterator[list[str]]:
    """While open, :func:`collected` and :func:`prime` run every child from :data:`FIXED`, not
    from the checkout: the same paths, byte for byte, whichever checkout (or clone, or CI's
    work directory) runs the count. Yields each of ``others``' (a source directory holding a
    ``svcrest`` package, or an installed build's site-packages) ``PYTHONPATH`` entry, its
    ``svcrest`` copied to ``FIXED/altN/src``, for a caller comparing other trees.

    Why: the count of one request moved by up to 2.5 % with the checkout's path alone. The
    path's length sizes the strings of start-up (``sys.path``, each module's ``__file__``,
    each code object's file name, the bytecode cache's stored file name that the import
    replaces), so where everything after them lands on the heap; CPython 3.11's type
    attribute cache picks an entry from the type's version and the *address* of the
    attribute's name, so which look-ups collide, and walk the class's MRO on every request,
    changes with the path (``bench/RESULTS.md``, session 21). Copied to one path, the child
    sees the same strings in the same order: its heap, and its count, no longer depend on
    where the checkout is. The children run the base interpreter with ``-S`` (no ``.pth``
    file, such as the editable install's, can add the checkout's path back) and
    ``PYTHONPATH`` naming only the copies and the linked site-packages.

    One count at a time holds the directory (an exclusive ``flock`` on ``FIXED.lock``): a
    second checkout's count waits for the first."""
    FIXED.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{FIXED}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another count to release {FIXED} ...", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        _prepare(others)
        _fixed.append(True)
        try:
            yield [str(FIXED / name / "src") for name in _ALTERNATIVES[: len(others)]]
        finally:
            _fixed.pop()


def _prepare(others: Sequence[str]) -> None:
    """Fill :data:`FIXED` for this count: fresh copies (and fresh bytecode caches for them:
    a cache validated by the source's time and size alone could outlive an edit)."""
    if len(others) > len(_ALTERNATIVES):
        raise SystemExit(f"at most {len(_ALTERNATIVES)} other trees")
    # Not a hidden entry: bench/.env (the HTTP benchmarks' own environment) is 100+ MB.
    ignore = shutil.ignore_patterns(".*", "__pycache__", "*.pyc", "*.md")
    for name in ("tree", *_ALTERNATIVES):
        shutil.rmtree(FIXED / name, ignore_errors=True)
        shutil.rmtree(_pycache() / FIXED.relative_to("/") / name, ignore_errors=True)
    shutil.copytree(CHECKOUT / "src" / "svcrest", FIXED / "tree" / "src" / "svcrest", ignore=ignore)
    shutil.copytree(CHECKOUT / "bench", FIXED / "tree" / "bench", ignore=ignore)
    for name, other in zip(_ALTERNATIVES, others, strict=False):
        shutil.copytree(Path(other) / "svcrest", FIXED / name / "src" / "svcrest", ignore=ignore)
    site = FIXED / "site-packages"
    site.unlink(missing_ok=True)
    site.symlink_to(sysconfig.get_paths()["purelib"], target_is_directory=True)


def _pycache() -> Path:
    return FIXED / "pycache"


def _command(
    args: Sequence[str], env: Mapping[str, str] | None
) -> tuple[list[str], dict[str, str]]:
    """The interpreter's command line and the environment of a child running ``args``."""
    environment = {**CHILD_ENVIRONMENT, **(env or {})}
    if not _fixed:
        return [sys.executable, *args], environment
    script = Path(args[0]).resolve()
    if not script.is_relative_to(CHECKOUT / "bench"):
        raise SystemExit(f"{script} is not one of this checkout's benchmark scripts")
    first = environment.get("PYTHONPATH", str(FIXED / "tree" / "src"))
    environment["PYTHONPATH"] = f"{first}:{FIXED / 'site-packages'}"
    environment["PYTHONPYCACHEPREFIX"] = str(_pycache())
    relocated = FIXED / "tree" / script.relative_to(CHECKOUT)
    base = getattr(sys, "_base_executable", sys.executable)
    return [base, "-S", str(relocated), *args[1:]], environment


def collected(args: list[str], env: Mapping[str, str] | None = None) -> int:
    """Instructions callgrind counts running ``python *args`` (with ``env`` added to the
    environment); SystemExit with callgrind's last lines when the run fails.

    The child's environment is fixed, not the caller's: a fixed hash seed (str and bytes
    hashes, and so dict and set probing, are the same in every run), and only the variables
    below. The caller's variables (a shell's, ``make``'s, pytest's) would otherwise reach the
    measured requests: the benchmarks' WSGI environ carries the process environment as
    granian's does, so each request's copy of it, and the heap it leaves, changed with
    whoever ran the count (thousands of instructions a request between two shells). Inside
    :func:`fixed_paths`, the child runs from its fixed directory."""
    python, environment = _command(args, env)
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *python]
    cwd = FIXED if _fixed else None
    done = subprocess.run(
        command, capture_output=True, text=True, env=environment, check=False, cwd=cwd
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or found is None:
        raise SystemExit(f"callgrind run of {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def prime(args: list[str], env: Mapping[str, str] | None = None) -> None:
    """Run ``python *args`` once, not counted, so that every module it imports has its
    bytecode cache written before the counted runs (which write none, and would otherwise
    each compile an edited module: more work than the requests they count)."""
    python, environment = _command(args, env)
    del environment["PYTHONDONTWRITEBYTECODE"]
    cwd = FIXED if _fixed else None
    done = subprocess.run(
        python, capture_output=True, text=True, env=environment, check=False, cwd=cwd
    )
    if done.returncode:
        raise SystemExit(f"run of {' '.join(args)} failed:\n{done.stderr[-2000:]}")


def settle() -> None:
    """Called by a measured child after its warm-up, in the run of no requests as in the run
    of many (so its own cost cancels out): the garbage of start-up and warm-up collected, and
    every object left frozen out of the collector's generations (``gc.freeze``). The requests
    counted after it then start from the same heap whatever the start-up left behind (the
    tree's path, the modules imported, one function more or less), and a collection they
    trigger walks only what they themselves left: the count follows the request path, not
    the heap's layout."""
    gc.collect()
    gc.freeze()
