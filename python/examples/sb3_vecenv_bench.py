"""Env-only throughput of SB3 VecEnvs over spider: spider_env.sb3.SpiderVecEnv
(one server batch, one request per step) against DummyVecEnv and
SubprocVecEnv of SpiderEnv (one request per game per step), with a
uniformly random legal-move policy and no learner.

    python python/examples/sb3_vecenv_bench.py --envs 16 --steps 2000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from spider_env import SpiderEnv
from spider_env.sb3 import SpiderVecEnv  # says how to install stable-baselines3 when it is missing

try:
    from sb3_contrib.common.maskable.utils import get_action_masks
except ImportError as e:
    raise SystemExit(
        f"{e}: this example needs sb3-contrib: pip install './python[sb3]' from the spider repository"
    ) from e
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv


def run(venv: VecEnv, steps: int, seed: int) -> float:
    """Steps per second (env steps: vector steps x games) of a random masked policy."""
    rng = np.random.default_rng(seed)
    venv.seed(seed)
    venv.reset()
    t0 = time.perf_counter()
    for _ in range(steps):
        masks = get_action_masks(venv)
        venv.step(np.where(masks, rng.random(masks.shape), -1.0).argmax(axis=1))
    rate = steps * venv.num_envs / (time.perf_counter() - t0)
    venv.close()
    return rate


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", type=int, default=16)
    p.add_argument("--steps", type=int, default=2000, help="vector steps per VecEnv (at most 100000)")
    p.add_argument("--max-steps", type=int, default=500)
    p.add_argument("--obs", default="float32", choices=["float32", "compact"])
    p.add_argument("--skip-subproc", action="store_true")
    args = p.parse_args()
    steps = min(args.steps, 100_000)
    game = {"max_steps": args.max_steps, "obs": args.obs}

    def make(i: int) -> Callable[[], SpiderEnv]:
        return lambda: SpiderEnv(**game)

    kinds: list[tuple[str, Callable[[], VecEnv]]] = [
        ("SpiderVecEnv", lambda: SpiderVecEnv(args.envs, **game)),
        ("DummyVecEnv(SpiderEnv)", lambda: DummyVecEnv([make(i) for i in range(args.envs)])),
    ]
    if not args.skip_subproc:
        kinds.append(("SubprocVecEnv(SpiderEnv)", lambda: SubprocVecEnv([make(i) for i in range(args.envs)])))
    for name, build in kinds:
        print(f"{name:26s} {args.envs} games, obs {args.obs}: {run(build(), steps, 0):9.0f} env steps/s", flush=True)


if __name__ == "__main__":
    main()
