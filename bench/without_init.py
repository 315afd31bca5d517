"""What a class call costs against ``svcrest.instances.without_init`` plus setting the slots
by hand, in CPU instructions (valgrind's callgrind; the figure the helper's docstring quotes).

Usage::

    python bench/without_init.py [--loops 20000] [--fields 4,6,8,14]

For each field count ``N`` a ``@dataclass(slots=True)`` class of ``N`` fields is made
``--loops`` times by each way, each in a child process under callgrind, less a child that
runs the same loop making nothing: the class call with its ``N`` values by position, the
class call with them by keyword, and ``without_init`` with ``N`` attribute stores.
"""

from __future__ import annotations

import argparse
import shutil
from dataclasses import make_dataclass
from typing import Any

from callgrind import collected

WAYS = ("nothing", "positional", "keywords", "without_init")


def _source(way: str, fields: int) -> str:
    """A function ``make(cls, loops)`` building ``cls`` ``loops`` times the ``way`` way."""
    names = [f"f{index}" for index in range(fields)]
    if way == "nothing":
        body = "        made = None"
    elif way == "positional":
        body = f"        made = cls({', '.join(str(index) for index in range(fields))})"
    elif way == "keywords":
        body = f"        made = cls({', '.join(f'{n}={i}' for i, n in enumerate(names))})"
    else:
        stores = "".join(f"\n        made.{n} = {i}" for i, n in enumerate(names))
        body = f"        made = without_init(cls){stores}"
    return f"def make(cls, loops):\n    for _ in range(loops):\n{body}\n    return made\n"


def child(way: str, fields: int, loops: int) -> None:
    from svcrest.instances import without_init

    cls = make_dataclass("Made", [f"f{index}" for index in range(fields)], slots=True)
    space: dict[str, Any] = {"without_init": without_init}
    exec(_source(way, fields), space)  # the benchmark's own text
    space["make"](cls, loops)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--loops", type=int, default=20_000)
    parser.add_argument("--fields", default="4,6,8,14")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child[0], int(options.child[1]), int(options.child[2]))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    print(f"instructions per instance ({options.loops:,} made, callgrind)")
    print(f"{'fields':>6} {'positional':>11} {'keywords':>9} {'without_init':>13}")
    for fields in (int(count) for count in options.fields.split(",")):
        totals = {
            way: collected([__file__, "--child", way, str(fields), str(options.loops)])
            for way in WAYS
        }
        costs = [(totals[way] - totals["nothing"]) // options.loops for way in WAYS[1:]]
        print(f"{fields:>6} {costs[0]:>11,} {costs[1]:>9,} {costs[2]:>13,}", flush=True)


if __name__ == "__main__":
    main()
