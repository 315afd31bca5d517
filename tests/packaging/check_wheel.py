"""The built package works on its own: ``make wheel-check`` runs this after ``python -m build``.

Usage: ``python tests/packaging/check_wheel.py DIST_DIR WHEEL_VENV_BIN``, where ``DIST_DIR``
holds the sdist and the wheel ``python -m build`` made and ``WHEEL_VENV_BIN`` is the ``bin``
directory of a clean virtual environment the wheel was installed into. It checks that

- the sdist and the wheel both ship the ``LICENSE`` file (``pyproject.toml`` says MIT);
- ``svcrest --version`` of that environment prints ``svcrest <the wheel's version>``;
- the README's first example runs with that environment's Python, from an empty folder, in
  isolated mode (no ``src/``, no ``PYTHONPATH``), and imports svcrest from the environment.

It prints what it checked and exits non-zero on the first failure.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.test_readme import runnable_blocks  # noqa: E402  (needs ROOT on sys.path first)


def _one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    if len(found) != 1:
        raise SystemExit(f"expected one {pattern} in {dist}, found {[p.name for p in found]}")
    return found[0]


def check_license(sdist: Path, wheel: Path) -> None:
    """Both archives carry the repository's LICENSE, byte for byte."""
    expected = (ROOT / "LICENSE").read_bytes()
    with tarfile.open(sdist) as archive:
        names = [n for n in archive.getnames() if n.endswith("/LICENSE")]
        member = archive.extractfile(names[0]) if names else None
        if member is None or member.read() != expected:
            raise SystemExit(f"{sdist.name} does not ship LICENSE")
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        if not names or archive.read(names[0]) != expected:
            raise SystemExit(f"{wheel.name} does not ship LICENSE")
    print(f"ok: LICENSE in {sdist.name} and {wheel.name}")


def check_version(bin_dir: Path, version: str, cwd: Path) -> None:
    """``svcrest --version`` answers with the wheel's version."""
    done = subprocess.run(
        [str(bin_dir / "svcrest"), "--version"], cwd=cwd, capture_output=True, text=True
    )
    if done.returncode != 0 or done.stdout.strip() != f"svcrest {version}":
        raise SystemExit(f"svcrest --version: {done.returncode} {done.stdout!r} {done.stderr!r}")
    print(f"ok: svcrest --version prints 'svcrest {version}'")


def check_readme_example(bin_dir: Path, cwd: Path) -> None:
    """The README's first example runs against the installed wheel only."""
    script = cwd / "readme_example.py"
    script.write_text(
        runnable_blocks()[0] + "\nimport svcrest\nprint(svcrest.__file__)\n", encoding="utf-8"
    )
    done = subprocess.run(
        [str(bin_dir / "python"), "-I", str(script)], cwd=cwd, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"the README's first example failed:\n{done.stderr}")
    location = Path(done.stdout.strip().splitlines()[-1]).resolve()
    if not location.is_relative_to(bin_dir.parent.resolve()):
        raise SystemExit(f"svcrest was imported from {location}, not from the wheel's venv")
    print(f"ok: the README's first example runs on the wheel ({location.parent})")


def main(argv: list[str]) -> None:
    dist, bin_dir = Path(argv[0]), Path(argv[1]).absolute()
    wheel = _one(dist, "svcrest-*.whl")
    sdist = _one(dist, "svcrest-*.tar.gz")
    version = wheel.name.split("-")[1]
    check_license(sdist, wheel)
    with tempfile.TemporaryDirectory() as empty:
        check_version(bin_dir, version, Path(empty))
        check_readme_example(bin_dir, Path(empty))


if __name__ == "__main__":
    main(sys.argv[1:])
