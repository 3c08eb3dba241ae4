"""PPO with action masking on Spider-v0 in RLlib (new API stack).

    python python/examples/rllib_ppo.py --env-runners 2 --iters 5

Registers ``spider_env.rllib.env_creator`` as "Spider-v0", trains RLlib's
``ActionMaskingTorchRLModule`` (from RLlib's examples: it reads the
``{"observations", "action_mask"}`` Dict observations of
``MaskInObservation``) with ``--env-runners`` remote env runners, each
starting its own spider server (or connecting to ``--address``, e.g. a
``spider serve`` on each node), and prints per iteration the env steps
sampled, the time and the episodes each runner finished. Starts a local
Ray (``ray.init(num_cpus=...)``) unless ``--ray-address`` names a
cluster, and shuts it down at the end.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np


def _number(x: Any) -> bool:
    """Whether x is a real number: RLlib reports numpy scalars too
    (np.float32 where the batch's rewards are float32), and NaN where
    nothing finished this iteration."""
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and bool(np.isfinite(x))


def _count(x: Any) -> int:
    """A summed metric as an int, 0 where there is none."""
    return int(x) if _number(x) else 0


def _round(x: Any) -> float | None:
    """A mean to 3 places, or None (JSON null, never a bare NaN)."""
    return round(float(x), 3) if _number(x) else None


def build_config(args: argparse.Namespace) -> Any:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    import spider_env.rllib

    env_config: dict[str, Any] = {"suits": args.suits, "max_steps": args.max_steps, "obs": args.obs}
    if args.address:
        env_config["address"] = args.address
    name = spider_env.rllib.register()
    return (
        PPOConfig()
        .environment(name, env_config=env_config)
        .env_runners(
            num_env_runners=args.env_runners,
            num_envs_per_env_runner=args.envs_per_runner,
            rollout_fragment_length="auto",  # train_batch / (runners x envs per runner)
            gym_env_vectorize_mode="vector_entry_point" if args.vector else "sync",
        )
        .learners(num_learners=0)
        .training(
            train_batch_size_per_learner=args.train_batch,
            minibatch_size=args.minibatch,
            num_epochs=args.epochs,
            lr=3e-4,
        )
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=ActionMaskingTorchRLModule,
                model_config={"fcnet_hiddens": [args.hidden], "head_fcnet_hiddens": [args.hidden]},
            )
        )
        .callbacks(on_episode_end=spider_env.rllib.log_episode_metrics)
        .debugging(seed=args.seed)
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env-runners", type=int, default=2, help="remote env runners (0: sample in the driver)")
    p.add_argument("--envs-per-runner", type=int, default=1)
    p.add_argument("--vector", action="store_true", help="one SpiderVectorEnv batch per runner (vector_entry_point)")
    p.add_argument("--iters", type=int, default=3, help="training iterations (bounded: at most 1000)")
    p.add_argument("--train-batch", type=int, default=1000, help="env steps per iteration")
    p.add_argument("--minibatch", type=int, default=250)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--suits", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=200)
    p.add_argument("--obs", default="float32", choices=["float32", "compact"])
    p.add_argument("--address", default=None, help="a running spider serve for every runner (e.g. 127.0.0.1:7878)")
    p.add_argument("--ray-address", default=None, help="an existing Ray cluster (default: start a local one)")
    p.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torch-threads", type=int, default=1, help="torch's threads in the driver (its local learner)")
    p.add_argument("--json", action="store_true", help="print one JSON line per iteration")
    args = p.parse_args()
    args.iters = min(args.iters, 1000)

    import ray
    import torch

    torch.set_num_threads(args.torch_threads)
    if args.ray_address:
        ray.init(address=args.ray_address)
    else:
        ray.init(num_cpus=args.num_cpus, include_dashboard=False)
    algo = None
    try:
        algo = build_config(args).build_algo()
        t_start = time.perf_counter()
        steps_before = 0
        for it in range(1, args.iters + 1):
            t0 = time.perf_counter()
            result = algo.train()
            dt = time.perf_counter() - t0
            runners = result.get("env_runners", {})
            steps = int(runners.get("num_env_steps_sampled_lifetime", 0))
            spider = runners.get("spider", {})
            by_runner = spider.get("episodes_by_runner", {})
            sample_s = runners.get("sample")
            row = {
                "iter": it,
                "env_steps": steps - steps_before,
                "seconds": round(dt, 2),
                "env_steps_per_s": round((steps - steps_before) / dt, 1),
                # Runners sample at the same time: steps over one runner's sample() time.
                "sample_s": _round(sample_s),
                "sampled_steps_per_s": _round((steps - steps_before) / sample_s) if sample_s else None,
                "episodes_by_runner_so_far": {str(k): _count(v) for k, v in sorted(by_runner.items())},
                "episode_return_mean": _round(runners.get("episode_return_mean")),
                "won_mean": _round(spider.get("won")),
                "runs_mean": _round(spider.get("runs")),
                "score_mean": _round(spider.get("score")),
                "illegal_so_far": _count(spider.get("illegal", 0)),
            }
            steps_before = steps
            print(json.dumps(row, allow_nan=False) if args.json else row, flush=True)
        total = time.perf_counter() - t_start
        print(
            f"{args.env_runners} env runner(s) x {args.envs_per_runner} env(s): {steps_before} env steps in "
            f"{total:.1f} s of training = {steps_before / total:.1f} env steps/s (sampling and learning)"
        )
    finally:
        if algo is not None:
            algo.stop()
        ray.shutdown()


if __name__ == "__main__":
    main()
