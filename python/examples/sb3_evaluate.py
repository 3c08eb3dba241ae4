"""Evaluate a MaskablePPO model saved by Stable-Baselines3 with ``spider eval``:
on a benchmark suite's deals, against built-in baselines, with paired tests.

    python python/examples/sb3_evaluate.py MODEL.zip --suite classic-1suit-test --baselines greedy,search
    python python/examples/sb3_evaluate.py --train 2048 --save /tmp/tiny.zip --suite classic-1suit-dev

The model is served as a policy agent (``spider_env.evaluate``): ``spider
eval`` sends it batches of observations and masks over a Unix socket and
plays its answers on the same deals as the baselines. ``--train N`` first
trains a model for N steps (to try the example without one). Search takes
about 17 minutes on a 1000-deal one-suit suite on 2 cores (more on two
suits; a 200-deal suite takes a fifth of it); ``--json`` prints eval's
whole report.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

import spider_env


def train(path: str, steps: int, suits: int = 1, rules: str = "classic", seed: int = 0) -> None:
    """Train MaskablePPO for ``steps`` env steps on training deals and save it to ``path``."""
    from sb3_contrib import MaskablePPO

    from spider_env.sb3 import SpiderVecEnv

    venv = SpiderVecEnv(8, rules=rules, suits=suits)
    try:
        # The algorithm seeds the env as it is built (a venv.seed before it
        # is overwritten): seed + 1 deals seeds 1-8, ...: inside the
        # tuning range, far from the test suites.
        model = MaskablePPO(
            "MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=seed + 1, device="cpu", verbose=0
        )
        model.learn(total_timesteps=steps)
        model.save(path)
    finally:
        venv.close()


def evaluate_model(path: str, suite: str, baselines: list[str], **kwargs: Any) -> dict[str, Any]:
    """Load the MaskablePPO model at ``path`` and evaluate it on ``suite`` against ``baselines``."""
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(path, device="cpu")
    space = model.observation_space
    obs = "float32" if space.dtype == np.float32 else "compact"

    def policy(observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        actions, _ = model.predict(observations, action_masks=masks.astype(bool), deterministic=True)
        return np.asarray(actions)

    return spider_env.evaluate(policy, suite=suite, baselines=baselines, obs=obs, name="maskable-ppo", **kwargs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?", help="a MaskablePPO .zip saved by model.save")
    p.add_argument("--suite", default="classic-1suit-dev", help="spider eval --list-suites")
    p.add_argument("--baselines", default="greedy", help="comma-separated built-in policies, e.g. greedy,search")
    p.add_argument("--train", type=int, default=0, help="first train a model for this many steps")
    p.add_argument("--save", default="maskable-ppo-spider.zip", help="where --train saves the model")
    p.add_argument("--json", action="store_true", help="print eval's whole report as JSON")
    a = p.parse_args()
    path = a.model
    if a.train:
        train(a.save, a.train)
        path = a.save
    if not path:
        p.error("give a model, or --train N")
    rep = evaluate_model(path, a.suite, [b for b in a.baselines.split(",") if b], verbose=True)
    if a.json:
        print(json.dumps(rep, indent=2))
        return
    s = rep["suite"]
    print(f"suite {s['name']} (version {s['version']}): {rep['deals']} deals, step limit {rep['max_steps']}")
    for r in rep["policies"]:
        print(
            f"  {r['policy']:>22}: win rate {100 * r['win_rate']:5.1f}% "
            f"({100 * r['win_rate_lo95']:.1f}-{100 * r['win_rate_hi95']:.1f}), "
            f"mean score {r['mean_score']:7.1f}, failed games {r['failures']}"
        )
    for c in rep["comparisons"]:
        print(
            f"  {c['a']} vs {c['b']}: only A won {c['only_a_won']}, "
            f"only B won {c['only_b_won']}, McNemar p {c['mcnemar_p']:.3g}"
        )


if __name__ == "__main__":
    main()
