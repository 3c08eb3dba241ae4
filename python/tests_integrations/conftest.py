"""Fixtures of the integration tests (``make test-integrations``).

The Gymnasium-only cases (wrappers, CleanRL's loop, seeds) live in the
default suite, python/tests. Markers: ``sb3`` (stable-baselines3 / sb3-contrib, so torch) and
``rllib`` (ray[rllib], so torch). ``limit(seconds)`` bounds a test's wall
time: past it the test fails with TimeoutError (SIGALRM, main thread).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import numpy as np
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


@pytest.fixture(scope="session", autouse=True)
def spider_bin() -> str:
    """The spider binary: $SPIDER_BIN, else bin/spider built now with go build."""
    env = os.environ.get("SPIDER_BIN")
    if env:
        return env
    out = REPO / "bin" / "spider"
    go = shutil.which("go")
    if go is None:
        if not out.is_file():
            pytest.skip("the spider server cannot be built: no go toolchain and no bin/spider")
    else:
        p = subprocess.run(
            [go, "build", "-o", str(out), "./cmd/spider"], cwd=REPO, capture_output=True, text=True, timeout=600
        )
        if p.returncode != 0:
            pytest.fail(f"go build ./cmd/spider failed:\n{p.stdout}{p.stderr}", pytrace=False)
    os.environ["SPIDER_BIN"] = str(out)
    return str(out)


@pytest.fixture(scope="session")
def server(spider_bin: str) -> Iterator[object]:
    """One server shared by the tests that do not start their own."""
    from spider_env import SpiderServer

    with SpiderServer(spider_bin) as s:
        yield s


def masked_sample(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """One uniformly random legal action per row of masks (n x 1081, 0/1 or
    bool); a row without a legal action fails the test."""
    masks = np.asarray(masks).astype(bool)
    counts = masks.sum(axis=1)
    assert (counts > 0).all(), f"empty mask rows: {np.flatnonzero(counts == 0).tolist()}"
    keys = rng.random(masks.shape)
    return np.where(masks, keys, -1.0).argmax(axis=1)
