"""Shared fixtures: the server binary (built from the repository) and a
server that most tests share."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session", autouse=True)
def spider_bin() -> str:
    """The spider binary: $SPIDER_BIN, else bin/spider-pytest built now with
    go build (not bin/spider, which make build writes with OpenBLAS and the
    commit stamped, and which eval's figures are run with)."""
    env = os.environ.get("SPIDER_BIN")
    if env:
        return env
    out = REPO / "bin" / "spider-pytest"
    go = shutil.which("go")
    if go is None:
        if not out.is_file():
            pytest.skip("the spider server cannot be built: no go toolchain and no bin/spider-pytest")
    else:
        p = subprocess.run(
            [go, "build", "-o", str(out), "./cmd/spider"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if p.returncode != 0:
            pytest.fail(f"go build ./cmd/spider failed:\n{p.stdout}{p.stderr}", pytrace=False)
    os.environ["SPIDER_BIN"] = str(out)
    return str(out)


@pytest.fixture(scope="session")
def server(spider_bin):
    """One server for the tests that do not test starting their own."""
    from spider_env import SpiderServer

    with SpiderServer(spider_bin) as s:
        yield s
    assert s.proc.poll() is not None


def masked_random(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """One uniformly random legal action per row of masks (n x 1081 of 0/1).

    Rows without a legal action get 0.
    """
    n, width = masks.shape
    counts = masks.sum(axis=1, dtype=np.int64)
    flat = np.flatnonzero(masks.reshape(-1))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    k = (rng.random(n) * counts).astype(np.int64)
    out = np.zeros(n, dtype=np.int64)
    has = counts > 0
    out[has] = flat[starts[has] + k[has]] - np.flatnonzero(has) * width
    return out


def masked_sample(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """masked_random, for masks that must never have an empty row: one
    without a legal action fails the test."""
    masks = np.asarray(masks).astype(np.uint8)
    counts = masks.sum(axis=1)
    assert (counts > 0).all(), f"empty mask rows: {np.flatnonzero(counts == 0).tolist()}"
    return masked_random(rng, masks)


def all_stopped(pid: int) -> bool:
    """Whether every thread of process pid is stopped (state T in /proc);
    True where there is no /proc to ask."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        states = []
        for t in tasks:
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
    except OSError:
        return True
    return all(st in ("T", "t") for st in states)


@contextlib.contextmanager
def paused(pid: int) -> Iterator[None]:
    """Process pid stopped (SIGSTOP) for the block, then let go on.
    kill returns before every thread has stopped (one on the other core
    could still answer), so this waits for the kernel to report them all
    stopped."""
    os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 5
        while not all_stopped(pid) and time.monotonic() < deadline:
            time.sleep(0.001)
        yield
    finally:
        os.kill(pid, signal.SIGCONT)
