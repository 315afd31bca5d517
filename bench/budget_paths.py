"""Does the instruction budget read the same from any checkout? ``bench/budget.py`` counted
from three copies of this checkout at paths of different lengths and depths.

Usage::

    python bench/budget_paths.py [--cases wsgi,asgi,auth,collection] [--requests 300]
                                 [--spread 0.003] [--in-place]

Each copy holds this checkout's ``src/svcrest`` and ``bench`` (the working tree, edits
included) and a ``.venv`` linked to the running environment, so that each count runs from
another checkout path, another environment path and another working directory, as three
clones would. The copies' counts are printed side by side with each case's spread (the
largest less the smallest, over the smallest); the script exits 1 when a spread exceeds
``--spread`` (0.3 %). ``--in-place`` counts as ``budget.py`` did before session 21 (the
children run from each checkout's own paths): the spread the fixed paths remove. The copies
live under a temporary directory, removed at the end. About three times ``budget.py``'s time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent
#: Three checkout paths under the temporary directory: short, medium and long and deep.
CHECKOUTS = (
    "c",
    "work/clone-b",
    "home/someone/projects/a/much/longer/path/to/one/more/svcrest-checkout",
)


def copy(root: Path) -> Path:
    """A copy of this checkout's source and benchmarks at ``root``, its ``.venv`` a link to
    the running environment; the copy's interpreter."""
    ignore = shutil.ignore_patterns(".*", "__pycache__", "*.pyc")  # not bench/.env
    shutil.copytree(CHECKOUT / "src" / "svcrest", root / "src" / "svcrest", ignore=ignore)
    shutil.copytree(HERE, root / "bench", ignore=ignore)
    (root / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    python = root / ".venv" / Path(sys.executable).relative_to(sys.prefix)
    # The copy's interpreter must see the copy's environment path (the link, unresolved).
    found = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not found.startswith(str(root)):
        raise SystemExit(f"{python} reads {found}, not its own environment under {root}")
    return python


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default="wsgi,asgi,auth,collection")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--spread", type=float, default=0.003)
    parser.add_argument("--in-place", action="store_true", help="count as before session 21")
    options = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    print(f"this environment's site-packages: {sysconfig.get_paths()['purelib']}")
    results: list[dict[str, list[int]]] = []
    with tempfile.TemporaryDirectory(prefix="svcrest-budget-paths-") as top:
        for name in CHECKOUTS:
            root = Path(top) / name
            python = copy(root)
            command = [str(python), str(root / "bench" / "budget.py"), "--json"]
            command += ["--cases", options.cases, "--requests", str(options.requests)]
            command += ["--jobs", str(options.jobs)] + (["--in-place"] if options.in_place else [])
            done = subprocess.run(command, capture_output=True, text=True, cwd=root, check=False)
            if done.returncode:
                raise SystemExit(f"budget.py in {root} failed:\n{done.stdout}{done.stderr}")
            results.append(json.loads(done.stdout.splitlines()[-1]))
            print(f"counted from {root} ({len(str(root))} characters)", flush=True)
    print(f"{'case':11} {'':8}" + "".join(f" {f'copy {i + 1}':>9}" for i in range(3)) + " spread")
    wide = []
    for case in options.cases.split(","):
        for side, label in enumerate(("svcrest", "Falcon")):
            counts = [result[case][side] for result in results]
            spread = (max(counts) - min(counts)) / min(counts)
            if spread > options.spread:
                wide.append(f"{case} ({label})")
            row = "".join(f" {count:>9,}" for count in counts)
            print(f"{case if not side else '':11} {label:8}{row} {spread:6.2%}")
    if wide:
        print(f"spread over {options.spread:.1%}: {', '.join(wide)}")
        return 1
    print(f"every spread within {options.spread:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
