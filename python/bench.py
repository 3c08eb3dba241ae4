#!/usr/bin/env python3
"""Benchmark Python loops stepping SpiderVectorEnv beside the in-process Go batch.

For each batch size N, each path and each policy, a loop steps a batch of
one-suit games (compact observations, next-step autoreset) on a server on a
Unix socket. Paths:

* ``socket``: the arrays travel in the step reply (bit-packed masks,
  unpacked by numpy), ``shm=False``;
* ``shm``: the arrays are in memory shared with the server
  (``shm=True``), returned as views (``copy=False``): no copy at all;
* ``shm-copy``: shared memory with ``copy=True`` (Gymnasium's default):
  observations and masks copied out each step;
* ``shm-async``: shared memory, EnvPool's ``send``/``recv`` on two halves
  of the batch, so the policy chooses for one half while the server steps
  the other.

Policies: ``first``, the first legal action of each game (``argmax`` of the
mask), and ``random``, a uniformly random legal action per game drawn in
numpy from the mask (``flatnonzero``); ``first-list`` and ``random-list``
choose the same actions from the legal lists (``legal_actions=True``: the
server lists each game's legal actions beside its mask in shared memory,
the client computes them from the masks on the socket), reading a few ids
a game instead of scanning its 1081-byte mask row. Each row reports env-steps/s of the whole loop, the
policy's share of the loop's time, and the CPU used in cores (this process
and the server together, per second of the loop). ``bin/spider bench`` (the
Go batch stepped in-process with its own random policy, no socket) runs at
every N in the same invocation. The table goes to stdout (or JSON with
--json); progress to stderr.

    .venv/bin/python python/bench.py
    .venv/bin/python python/bench.py --sizes 4096 --paths shm,socket --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

import spider_env
from spider_env import SpiderServer, SpiderVectorEnv

Actions = NDArray[np.intp]


# A policy's view of a batch: masks, legal counts (an all-ones row counted),
# and the legal lists (None unless the policy reads them).
View = tuple[NDArray[np.int8], NDArray[np.int32], "NDArray[np.int16] | None"]


def first_legal(view: View, rng: np.random.Generator) -> Actions:
    return np.asarray(view[0].view(np.bool_).argmax(axis=1))


def random_legal(view: View, rng: np.random.Generator) -> Actions:
    """Uniform over each row's legal actions: the k-th of the row's nonzeros."""
    masks, num_legal, _ = view
    n, width = masks.shape
    counts = num_legal.astype(np.int64)
    flat = np.flatnonzero(masks.view(np.bool_))  # row-major: row i's legal actions are contiguous
    starts = np.cumsum(counts) - counts
    k = (rng.random(n) * counts).astype(np.int64)
    return np.asarray(flat[starts + k] - np.arange(n, dtype=np.intp) * width)


def first_listed(view: View, rng: np.random.Generator) -> Actions:
    legal = view[2]
    assert legal is not None
    return np.asarray(legal[:, 0], dtype=np.intp)


def random_listed(view: View, rng: np.random.Generator) -> Actions:
    """Uniform over each row's legal actions: the k-th of the row's list."""
    _, num_legal, legal = view
    assert legal is not None
    n = num_legal.shape[0]
    k = (rng.random(n) * num_legal).astype(np.intp)
    return np.asarray(legal[np.arange(n), k], dtype=np.intp)


POLICIES = {"first": first_legal, "random": random_legal, "first-list": first_listed, "random-list": random_listed}
PATHS = ("socket", "shm", "shm-copy", "shm-async")


def auto_steps(n: int) -> int:
    return int(min(3000, max(40, 600_000 // n)))


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of process pid so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _true_legal(info: dict[str, Any]) -> NDArray[np.int32]:
    # num_legal is 0 for a game that ended (next-step), whose row is all
    # ones and whose action is ignored: count the row.
    nl: NDArray[np.int32] = info["num_legal"]
    return np.where(nl == 0, info["action_mask"].shape[1], nl).astype(np.int32)


def _view(info: dict[str, Any]) -> View:
    return info["action_mask"], _true_legal(info), info.get("legal_actions")


def measure(server: SpiderServer, n: int, path: str, policy: str, steps: int, seed: int) -> dict[str, Any]:
    shm = path != "socket"
    lists = policy.endswith("-list")
    venv = SpiderVectorEnv(
        n, address=server, obs="compact", shm=shm, copy=path == "shm-copy", mask="bits", legal_actions=lists
    )
    if venv.shared != shm:
        raise RuntimeError(f"path {path}: shared memory {venv.shared} ({venv.shm_error})")
    rng = np.random.default_rng(seed)
    choose = POLICIES[policy]
    half = n // 2
    halves = [np.arange(0, half), np.arange(half, n)] if path == "shm-async" and n > 1 else []
    pol_s = 0.0
    episodes = 0
    info: dict[str, Any] = {}

    def one_step() -> None:
        nonlocal info, pol_s, episodes
        t0 = time.perf_counter()
        actions = choose(_view(info), rng)
        pol_s += time.perf_counter() - t0
        _, _, term, trunc, info = venv.step(actions)
        episodes += int(np.count_nonzero(term | trunc))

    # shm-async: each half's masks and legal counts, from its last recv.
    state: list[View] = []

    def async_step() -> None:
        # A pipeline: the policy chooses for one half while the server
        # steps the other.
        nonlocal pol_s, episodes
        for h, ids in enumerate(halves):
            t0 = time.perf_counter()
            actions = choose(state[h], rng)
            pol_s += time.perf_counter() - t0
            if venv.client.pending:
                _, _, term, trunc, got = venv.recv()
                episodes += int(np.count_nonzero(term | trunc))
                state[1 - h] = _view(got)
            venv.send(actions, ids)

    try:
        _, info = venv.reset(seed=seed)
        for ids in halves:
            masks, counts, legal = _view(info)
            state.append((masks[ids], counts[ids], None if legal is None else legal[ids]))
        step = async_step if halves else one_step
        for _ in range(max(3, steps // 20)):  # warm up
            step()
        pol_s, episodes = 0.0, 0
        cpu0, scpu0, t0 = time.process_time(), _cpu_seconds(server.pid), time.perf_counter()
        for _ in range(steps):
            step()
        if venv.client.pending:
            venv.recv()
        wall = time.perf_counter() - t0
        cpu, scpu = time.process_time() - cpu0, _cpu_seconds(server.pid) - scpu0
        if venv.action_masks().sum() == 0:
            raise AssertionError("no legal action anywhere")
    finally:
        venv.close()
    total = n * steps
    return {
        "n": n,
        "path": path,
        "policy": policy,
        "seed": seed,
        "steps": steps,
        "env_steps": total,
        "episodes": episodes,
        "seconds": wall,
        "policy_seconds": pol_s,
        "env_steps_per_sec": total / wall,
        "ms_per_batch_step": wall / steps * 1e3,
        "policy_share": pol_s / wall,
        "python_cores": cpu / wall,
        "server_cores": scpu / wall,
        "cores": (cpu + scpu) / wall,
    }


def go_bench(binary: str, n: int, steps: int | None) -> dict[str, Any]:
    cmd = [binary, "bench", "--suits", "1", "--obs", "compact", "--n", str(n), "--json"]
    if steps:
        cmd += ["--steps", str(steps), "--warmup", str(max(1, steps // 5))]
    print(f"bench: {' '.join(cmd)}", file=sys.stderr, flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr.strip()}")
    rows: list[dict[str, Any]] = json.loads(p.stdout)
    return max(rows, key=lambda r: int(r["workers"]))  # the full worker count, not the 1-worker row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="64,1024,4096,16384", help="comma-separated batch sizes")
    ap.add_argument(
        "--steps", type=int, default=0, help="batch steps timed per run (default: 600000/N, clamped to 40..3000)"
    )
    ap.add_argument("--paths", default=",".join(PATHS), help=f"paths to measure (default {','.join(PATHS)})")
    ap.add_argument(
        "--policies",
        default="first,random,first-list,random-list",
        help="policies to measure (default first,random,first-list,random-list)",
    )
    ap.add_argument("--go-steps", type=int, default=0, help="steps of the Go bench (default: its own)")
    ap.add_argument("--no-go", action="store_true", help="skip the in-process Go bench")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    paths = [p for p in args.paths.split(",") if p]
    policies = [p for p in args.policies.split(",") if p]
    for p in paths:
        if p not in PATHS:
            ap.error(f"--paths {p!r}: want {', '.join(PATHS)}")
    for p in policies:
        if p not in POLICIES:
            ap.error(f"--policies {p!r}: want {', '.join(POLICIES)}")

    binary = spider_env.find_binary()
    results = []
    go: dict[int, dict[str, Any]] = {}
    start = time.perf_counter()
    with SpiderServer(binary, args=["--max-games", str(max([*sizes, 16384]))]) as server:
        for n in sizes:
            steps = args.steps or auto_steps(n)
            if not args.no_go:
                go[n] = go_bench(binary, n, args.go_steps)
            for path in paths:
                for policy in policies:
                    r = measure(server, n, path, policy, steps, args.seed)
                    if n in go:
                        r["of_go"] = r["env_steps_per_sec"] / go[n]["env_steps_per_sec"]
                    results.append(r)
                    print(
                        f"bench: N={n:<5} path={path:<9} policy={policy:<6} "
                        f"{r['env_steps_per_sec']:>12,.0f} env-steps/s  "
                        f"({r['ms_per_batch_step']:.3f} ms a step, policy {r['policy_share']:.0%}, "
                        f"{r['cores']:.2f} cores)",
                        file=sys.stderr,
                        flush=True,
                    )
    elapsed = time.perf_counter() - start

    version = subprocess.run([binary, "version"], capture_output=True, text=True, check=True)
    machine = {
        # What was measured: the server's build (as spider eval and bench
        # record it) and the client's.
        "spider": version.stdout.strip().removeprefix("spider "),
        "spider_env": spider_env.__version__,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "seconds": elapsed,
    }
    if args.json:
        json.dump({"python": results, "go": list(go.values()), "machine": machine}, sys.stdout, indent=2)
        print()
        return 0

    print(
        f"SpiderVectorEnv loops (1 suit, compact obs, next-step autoreset, server on a Unix socket, seed {args.seed}; "
        f"{machine['cpus']} CPUs, Python {machine['python']}, numpy {machine['numpy']}, "
        f"spider {machine['spider']}, spider_env {machine['spider_env']})."
    )
    print()
    print("| N | path | policy | env-steps/s | of Go | ms/step | policy share | cores (Python + server) |")
    print("|---:|:---|:---|---:|---:|---:|---:|---:|")
    for r in results:
        of_go = f"{r['of_go']:.0%}" if "of_go" in r else "-"
        print(
            f"| {r['n']} | {r['path']} | {r['policy']} | {r['env_steps_per_sec']:,.0f} | {of_go} | "
            f"{r['ms_per_batch_step']:.3f} | {r['policy_share']:.0%} | "
            f"{r['cores']:.2f} ({r['python_cores']:.2f} + {r['server_cores']:.2f}) |"
        )
    if go:
        print()
        print("In-process Go batch, `bin/spider bench --suits 1 --obs compact` (SampleLegal policy, no socket):")
        print()
        print("| N | workers | env-steps/s | ns/env-step |")
        print("|---:|---:|---:|---:|")
        for g in go.values():
            print(f"| {g['n']} | {g['workers']} | {g['env_steps_per_sec']:,.0f} | {g['ns_per_env_step']:.1f} |")
    print()
    print(f"({elapsed:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
