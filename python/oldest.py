"""Print the oldest versions pyproject.toml allows, one pin a line, for pip.

`make test-oldest` installs them and runs the tests against them, so that
the lower bounds the package declares are ones it works with. A bound of
a minor release (numpy>=1.23) is pinned to that release series
(numpy~=1.23.0: its newest patch, which has wheels for Pythons newer than
the first patch had); a bound with a patch number is pinned exactly.
Every dependency needs a ">=" bound: one without is an error, since
nothing could be tested for it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info < (3, 11):
    raise SystemExit("python/oldest.py reads pyproject.toml with tomllib: it needs Python 3.11 or later")
import tomllib


def oldest(pyproject: Path) -> list[str]:
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    pins = []
    for dep in deps:
        m = re.fullmatch(r"\s*([A-Za-z0-9_.\-\[\]]+)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*(,.*)?", dep)
        if m is None:
            raise SystemExit(f"{pyproject}: dependency {dep!r} has no >= lower bound to test")
        name, bound = m.group(1), m.group(2)
        pins.append(f"{name}~={bound}.0" if bound.count(".") == 1 else f"{name}=={bound}")
    return pins


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("pyproject.toml")
    print("\n".join(oldest(path)))
