"""``python -m svcrest``: the ``svcrest`` command line."""

from __future__ import annotations

from svcrest.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
