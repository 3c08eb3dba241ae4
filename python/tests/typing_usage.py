"""Documented usage that a user's type checker must accept, and mistakes
it must catch: ``make pylint`` runs mypy --strict on this file (it is not
a test module; nothing here runs). A mistake is marked with the error mypy
must give for it: were the annotations ever to let it through, the ignore
would be unused, which strict mypy reports."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from spider_env import SpiderConfig, SpiderEnv, SpiderVectorEnv, evaluate
from spider_env._client import Client
from spider_env.wrappers import MaskInObservation, VectorMaskInObservation


def single(seeds: list[int], predicted: NDArray[np.int64]) -> None:
    env = SpiderEnv(SpiderConfig(suits=2), illegal="lose", render_mode="ansi", mask="bits")
    obs, info = env.reset(seed=np.uint64(3))
    n: int = int(env.action_space.n)  # a Discrete, not a bare Space
    high: NDArray[Any] = env.observation_space.high  # a Box
    mask: NDArray[np.bool_] = env.action_masks()
    obs, reward, terminated, truncated, info = env.step(np.flatnonzero(mask)[0])
    obs, reward, terminated, truncated, info = env.step(predicted[0])  # SB3's predict gives arrays
    obs, reward, terminated, truncated, info = env.step(np.asarray(7))
    r: float = reward
    action, why = env.hint()
    env.step(action)
    made = gym.make("Spider-v0", suits=1)
    assert isinstance(made.unwrapped, SpiderEnv)  # gym.make returns a bare gymnasium Env
    made.unwrapped.hint()
    print(n, high, r, why, seeds, obs, info, terminated, truncated)

    SpiderEnv(illegal="nop")  # type: ignore[arg-type]
    SpiderEnv(mask="bytez")  # type: ignore[arg-type]
    SpiderEnv(render_mode="human")  # type: ignore[arg-type]
    env.step("7")  # type: ignore[arg-type]


def vector(seeds: list[int]) -> None:
    envs = SpiderVectorEnv(4, SpiderConfig(suits=1), autoreset_mode="disabled")
    envs.reset(seed=seeds)  # a list[int] is a list of seeds too (list is invariant)
    envs.reset(seed=[1, None, 3, None])
    envs.reset(seed=tuple(seeds))
    envs.reset(seed=np.arange(4))
    envs.reset(seed=range(4))
    envs.async_reset(seed=seeds)
    n: int = int(envs.single_action_space.n)
    nvec: NDArray[np.int64] = envs.action_space.nvec  # a MultiDiscrete
    low: NDArray[Any] = envs.observation_space.low
    obs, rewards, terminated, truncated, infos = envs.step(envs.action_masks().argmax(axis=1))
    r32: NDArray[np.float32] = rewards
    print(n, nvec, low, obs, r32, terminated, truncated, infos)

    envs.reset(seed=["1", "2", "3", "4"])  # type: ignore[list-item]


def client(c: Client, seeds: list[int]) -> None:
    c.reset(seed=np.int64(5))
    c.reset(seeds=seeds)
    c.reset(seeds=np.arange(4))

    c.reset(seed="5")  # type: ignore[arg-type]


def first_legal(obs: NDArray[Any], masks: NDArray[np.uint8]) -> NDArray[np.intp]:
    return np.asarray(masks.argmax(axis=1), dtype=np.intp)


def policies() -> None:
    evaluate(first_legal, seeds="1-2")
    evaluate(lambda obs, masks: masks.argmax(axis=1), seeds="1-2")
    evaluate(lambda obs, masks, boards: [0] * len(obs), seeds="1-2", board=True)

    evaluate(lambda obs: obs, seeds="1-2")  # type: ignore[arg-type]


def wrappers() -> None:
    env = MaskInObservation(SpiderEnv(suits=1))
    obs, _ = env.reset(seed=0)
    mask: NDArray[np.float32] = obs["action_mask"]
    obs, reward, terminated, truncated, _ = env.step(np.int64(mask.argmax()))
    venv = VectorMaskInObservation(SpiderVectorEnv(2, suits=1))
    vobs, _ = venv.reset(seed=0)
    vobs, rewards, vterminated, vtruncated, _ = venv.step(vobs["action_mask"].argmax(axis=1))
    r32: NDArray[np.float32] = rewards
    print(obs["observations"], reward, terminated, truncated, r32, vterminated, vtruncated)

    wrong: str = obs["action_mask"]  # type: ignore[assignment]
    env.step("7")  # type: ignore[arg-type]
    scalar: int = rewards  # type: ignore[assignment]
    print(wrong, scalar)
