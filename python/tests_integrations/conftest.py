"""Fixtures of the integration tests (``make test-integrations``).

The Gymnasium-only cases (wrappers, CleanRL's loop, seeds) live in the
default suite, python/tests. Markers: ``sb3`` (stable-baselines3 / sb3-contrib, so torch) and
``rllib`` (ray[rllib], so torch). ``limit(seconds)`` bounds a test's wall
time: past it the test fails with TimeoutError (SIGALRM, main thread).
"""

from __future__ import annotations

import importlib.util
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

REPO = Path(__file__).resolve().parents[2]
DEFAULT_LIMIT_S = 120


def pytest_configure(config: pytest.Config) -> None:
    for line in (
        "sb3: needs stable-baselines3 and sb3-contrib",
        "rllib: needs ray[rllib]",
        "limit(seconds): fail the test with TimeoutError after this many seconds",
    ):
        config.addinivalue_line("markers", line)


@pytest.fixture(autouse=True)
def _time_limit(request: pytest.FixtureRequest) -> Iterator[None]:
    marker = request.node.get_closest_marker("limit")
    seconds = int(marker.args[0]) if marker else DEFAULT_LIMIT_S

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"{request.node.nodeid} ran past its limit of {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(autouse=True)
def _sb3_logs_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every SB3 model made without a log folder makes an empty
    # $TMPDIR/SB3-<date> one (its logger's default); SB3_LOGDIR keeps them
    # in the test's own folder, which pytest cleans.
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path / "sb3-logs"))


# The binary, the shared server and the sampler are the default suite's
# (python/tests/conftest.py), loaded under a name of their own since both
# files are "conftest".
_spec = importlib.util.spec_from_file_location("spider_tests_conftest", REPO / "python" / "tests" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_default = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_default)
spider_bin = _default.spider_bin
server = _default.server
masked_sample = _default.masked_sample
