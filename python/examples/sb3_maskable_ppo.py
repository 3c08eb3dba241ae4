"""MaskablePPO (sb3-contrib) on spider_env.sb3.SpiderVecEnv, then an
evaluation against a uniformly random legal-move policy on the same deals.

    python python/examples/sb3_maskable_ppo.py --timesteps 100000 --eval-games 200

Training runs ``--envs`` games in one server batch (one request per step
for all of them). ``--time-limit`` bounds the training's wall time (it
stops early and says so). The evaluation deals games ``--eval-seed``,
``--eval-seed + 1``, ... (``SpiderEnv().reset(seed=s)``'s deals), plays
each one episode with the trained policy (masked; deterministic and
stochastic) and with the random masked policy, and prints the win rate,
the mean final score and the mean completed runs of each. ``--json``
prints one JSON object at the end.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from spider_env.sb3 import SpiderVecEnv


def play(
    venv: SpiderVecEnv, seeds: list[int], choose: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> dict[str, float]:
    """Play each deal of seeds once (one game of the batch per deal);
    return the win rate, mean score and mean runs of those episodes."""
    venv.seed(seeds)  # game i deals seeds[i]
    obs = venv.reset()
    done = np.zeros(len(seeds), bool)
    won, score, runs = np.zeros(len(seeds)), np.zeros(len(seeds)), np.zeros(len(seeds))
    for _ in range(1_000_000):  # bounded: every episode ends by max_steps
        if done.all():
            break
        obs, _, dones, infos = venv.step(choose(obs, venv.action_masks()))
        for i in np.flatnonzero(dones & ~done):
            ep = infos[i]["spider_episode"]
            won[i], score[i], runs[i] = ep["won"], infos[i]["score"], ep["runs"]
            done[i] = True
    return {"win_rate": float(won.mean()), "mean_score": float(score.mean()), "mean_runs": float(runs.mean())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--timesteps", type=int, default=100_000, help="training env steps (at most 10M)")
    p.add_argument("--time-limit", type=float, default=1800, help="stop training after this many seconds")
    p.add_argument("--envs", type=int, default=16, help="games in the training batch")
    p.add_argument("--n-steps", type=int, default=128, help="steps per game per rollout")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--rules", default="classic")
    p.add_argument("--suits", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=500, help="the episode limit, in training and evaluation")
    p.add_argument("--obs", default="float32", choices=["float32", "compact"])
    p.add_argument("--shaping", default="progress", choices=["none", "progress"], help="reward shaping (training)")
    p.add_argument("--eval-games", type=int, default=200, help="0: no evaluation")
    p.add_argument("--eval-seed", type=int, default=100001)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", default=None, help="save the model here (a .zip)")
    p.add_argument("--load", default=None, help="evaluate this saved model instead of training")
    p.add_argument(
        "--torch-threads", type=int, default=1, help="torch's threads (1: two threads on 2 busy cores ran 30x slower)"
    )
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    args.timesteps = min(args.timesteps, 10_000_000)

    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecMonitor

    torch.set_num_threads(args.torch_threads)
    game = {"rules": args.rules, "suits": args.suits, "max_steps": args.max_steps, "obs": args.obs}
    out: dict[str, Any] = {"game": game, "args": vars(args)}

    class TimeLimit(BaseCallback):
        def __init__(self, seconds: float):
            super().__init__()
            self.deadline = time.monotonic() + seconds
            self.hit = False

        def _on_step(self) -> bool:
            self.hit = time.monotonic() > self.deadline
            return not self.hit

    if args.load:
        model = MaskablePPO.load(args.load, device="cpu")
        # Evaluate with the encoding the model was trained on, whatever --obs says.
        game["obs"] = "float32" if model.observation_space.dtype == np.float32 else "compact"
    else:
        shaping = {"shaping": args.shaping, "shaping_gamma": args.gamma} if args.shaping != "none" else {}
        env = VecMonitor(SpiderVecEnv(args.envs, **game, **shaping))
        model = MaskablePPO(
            "MlpPolicy",
            env,
            n_steps=args.n_steps,
            batch_size=args.batch_size,
            n_epochs=args.epochs,
            learning_rate=args.lr,
            gamma=args.gamma,
            ent_coef=args.ent_coef,
            seed=args.seed,
            device="cpu",
            verbose=0,
        )
        limit = TimeLimit(args.time_limit)
        t0 = time.perf_counter()
        model.learn(total_timesteps=args.timesteps, callback=limit)
        dt = time.perf_counter() - t0
        out["train"] = {
            "timesteps": int(model.num_timesteps),
            "seconds": round(dt, 1),
            "steps_per_s": round(model.num_timesteps / dt, 1),
            "stopped_by_time_limit": limit.hit,
            "episodes": int(env.episode_count),
        }
        print(f"trained {model.num_timesteps} steps in {dt:.1f} s: {model.num_timesteps / dt:.1f} steps/s", flush=True)
        if args.save:
            model.save(args.save)
        env.close()

    if args.eval_games <= 0:
        print(json.dumps(out) if args.json else out.get("train"))
        return
    seeds = list(range(args.eval_seed, args.eval_seed + args.eval_games))
    venv = SpiderVecEnv(len(seeds), **game)  # unshaped: scores, wins and runs are never shaped anyway
    rng = np.random.default_rng(args.seed)

    def random_masked(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        keys = np.where(masks, rng.random(masks.shape), -1.0)
        return keys.argmax(axis=1)

    def policy(deterministic: bool) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        def choose(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
            actions, _ = model.predict(obs, action_masks=masks, deterministic=deterministic)
            return np.asarray(actions)

        return choose

    t0 = time.perf_counter()
    out["eval"] = {
        "seeds": f"{seeds[0]}-{seeds[-1]}",
        "maskable_ppo_deterministic": play(venv, seeds, policy(True)),
        "maskable_ppo_stochastic": play(venv, seeds, policy(False)),
        "random_masked": play(venv, seeds, random_masked),
    }
    out["eval"]["seconds"] = round(time.perf_counter() - t0, 1)
    venv.close()
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            if k != "args":
                print(f"{k}: {v}")


if __name__ == "__main__":
    main()
