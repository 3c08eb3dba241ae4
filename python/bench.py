#!/usr/bin/env python3
"""Benchmark a Python loop playing random legal actions through SpiderVectorEnv.

For each batch size N and mask format (bytes: 1081 bytes a game; bits: 136),
two policies drive the batch:

* ``first``: a near-free policy, the first legal action of each game
  (``argmax`` of the mask), so the loop measures the environment;
* ``random``: a uniformly random legal action per game, drawn in numpy
  without a Python loop over games.

The time inside ``env.step`` (request, server step, transfer, decoding) and
the time of the policy are measured separately. ``bin/spider bench`` (the Go
batch stepped in-process, no socket) runs in the same invocation for
comparison. The table goes to stdout (or JSON with --json); progress to
stderr.

    .venv/bin/python python/bench.py
    .venv/bin/python python/bench.py --sizes 1,4096 --steps 100 --mask bits --json
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


def first_legal(masks: NDArray[np.int8], num_legal: NDArray[np.int32], rng: np.random.Generator) -> Actions:
    return np.asarray(masks.view(np.bool_).argmax(axis=1))


def random_legal(masks: NDArray[np.int8], num_legal: NDArray[np.int32], rng: np.random.Generator) -> Actions:
    """Uniform over each row's legal actions: the k-th of the row's nonzeros."""
    n, width = masks.shape
    counts = num_legal.astype(np.int64)
    flat = np.flatnonzero(masks.view(np.bool_))  # row-major: row i's legal actions are contiguous
    starts = np.cumsum(counts) - counts
    k = (rng.random(n) * counts).astype(np.int64)
    return np.asarray(flat[starts + k] - np.arange(n, dtype=np.intp) * width)


POLICIES = {"first": first_legal, "random": random_legal}


def auto_steps(n: int) -> int:
    return int(min(3000, max(40, 300_000 // n)))


def measure(server: SpiderServer, n: int, mask: str, policy: str, steps: int, seed: int) -> dict[str, Any]:
    venv = SpiderVectorEnv(n, mask=mask, address=server, obs="compact")
    rng = np.random.default_rng(seed)
    choose = POLICIES[policy]
    try:
        _, info = venv.reset(seed=seed)
        for _ in range(max(3, steps // 20)):  # warm up
            _, _, _, _, info = venv.step(choose(info["action_mask"], info["num_legal"], rng))
        env_s = pol_s = 0.0
        episodes = 0
        for _ in range(steps):
            t0 = time.perf_counter()
            actions = choose(info["action_mask"], info["num_legal"], rng)
            t1 = time.perf_counter()
            _, _, term, trunc, info = venv.step(actions)
            t2 = time.perf_counter()
            pol_s += t1 - t0
            env_s += t2 - t1
            episodes += int(np.count_nonzero(term | trunc))
            if info["illegal"].any():
                raise AssertionError("a masked action was illegal")
    finally:
        venv.close()
    total = n * steps
    return {
        "n": n,
        "mask": mask,
        "policy": policy,
        "steps": steps,
        "env_steps": total,
        "episodes": episodes,
        "env_seconds": env_s,
        "policy_seconds": pol_s,
        "loop_env_steps_per_sec": total / (env_s + pol_s),
        "env_only_env_steps_per_sec": total / env_s,
        "env_ms_per_batch_step": env_s / steps * 1e3,
        "policy_ms_per_batch_step": pol_s / steps * 1e3,
        "env_share": env_s / (env_s + pol_s),
    }


def go_bench(binary: str, n: int, steps: int | None) -> list[dict[str, Any]]:
    cmd = [binary, "bench", "--n", str(n), "--json"]
    if steps:
        cmd += ["--steps", str(steps), "--warmup", str(max(1, steps // 5))]
    print(f"bench: {' '.join(cmd)}", file=sys.stderr, flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr.strip()}")
    rows: list[dict[str, Any]] = json.loads(p.stdout)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,64,1024,4096", help="comma-separated batch sizes (default 1,64,1024,4096)")
    ap.add_argument(
        "--steps", type=int, default=0, help="batch steps timed per run (default: 300000/N, clamped to 40..3000)"
    )
    ap.add_argument("--mask", default="bytes,bits", help="mask formats to measure: bytes, bits or both (default)")
    ap.add_argument("--policies", default="first,random", help="policies to measure (default first,random)")
    ap.add_argument("--go-n", type=int, default=4096, help="N of the in-process Go bench (0: skip it)")
    ap.add_argument("--go-steps", type=int, default=0, help="steps of the Go bench (default: its own, 500)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    masks = [m for m in args.mask.split(",") if m]
    policies = [p for p in args.policies.split(",") if p]
    for m in masks:
        if m not in ("bytes", "bits"):
            ap.error(f"--mask {m!r}: want bytes or bits")
    for p in policies:
        if p not in POLICIES:
            ap.error(f"--policies {p!r}: want first or random")

    binary = spider_env.find_binary()
    results = []
    start = time.perf_counter()
    with SpiderServer(binary, args=["--max-games", str(max([*sizes, 16384]))]) as server:
        for n in sizes:
            steps = args.steps or auto_steps(n)
            for mask in masks:
                for policy in policies:
                    r = measure(server, n, mask, policy, steps, args.seed)
                    results.append(r)
                    print(
                        f"bench: N={n:<5} mask={mask:<5} policy={policy:<6} "
                        f"{r['loop_env_steps_per_sec']:>10,.0f} env-steps/s  "
                        f"(env {r['env_ms_per_batch_step']:.3f} ms, "
                        f"policy {r['policy_ms_per_batch_step']:.3f} ms a step)",
                        file=sys.stderr,
                        flush=True,
                    )
    go = go_bench(binary, args.go_n, args.go_steps) if args.go_n else []
    elapsed = time.perf_counter() - start

    machine = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "seconds": elapsed,
    }
    if args.json:
        json.dump({"python": results, "go": go, "machine": machine}, sys.stdout, indent=2)
        print()
        return 0

    print(
        f"Random-legal-action loop through SpiderVectorEnv (compact obs, next-step autoreset, "
        f"server on a Unix socket; {machine['cpus']} CPUs, Python {machine['python']}, numpy {machine['numpy']})."
    )
    print()
    print("| N | mask | policy | loop env-steps/s | env-only env-steps/s | env ms/step | policy ms/step | env share |")
    print("|---:|:---|:---|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['n']} | {r['mask']} | {r['policy']} | {r['loop_env_steps_per_sec']:,.0f} | "
            f"{r['env_only_env_steps_per_sec']:,.0f} | {r['env_ms_per_batch_step']:.3f} | "
            f"{r['policy_ms_per_batch_step']:.3f} | {r['env_share']:.0%} |"
        )
    if len(masks) == 2:
        print()
        print("bits vs bytes (env-only env-steps/s, first-legal policy where measured):")
        for n in sizes:
            rows = {r["mask"]: r for r in results if r["n"] == n and r["policy"] == policies[0]}
            if "bits" in rows and "bytes" in rows:
                ratio = rows["bits"]["env_only_env_steps_per_sec"] / rows["bytes"]["env_only_env_steps_per_sec"]
                print(f"- N={n}: bits/bytes = {ratio:.2f}x")
    if go:
        print()
        print("In-process Go batch, `bin/spider bench` (SampleLegal policy, no socket):")
        print()
        print("| N | workers | env-steps/s | ns/env-step |")
        print("|---:|---:|---:|---:|")
        for g in go:
            print(f"| {g['n']} | {g['workers']} | {g['env_steps_per_sec']:,.0f} | {g['ns_per_env_step']:.1f} |")
    print()
    print(f"({elapsed:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
