"""Pictures of the board (render_mode="rgb_array"), copies of an env
(pickle and deepcopy), and the wheel that carries its own server."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from conftest import REPO, masked_random
from spider_env import SpiderConfig, SpiderEnv, SpiderVectorEnv


def test_rgb_array_render(server):
    env = SpiderEnv(address=server, render_mode="rgb_array")
    venv = SpiderVectorEnv(2, address=server, render_mode="rgb_array")
    try:
        assert "rgb_array" in env.metadata["render_modes"]
        info = env.reset(seed=3)[1]
        first = env.render()
        assert isinstance(first, np.ndarray) and first.dtype == np.uint8 and first.shape == (480, 640, 3)
        assert first.std() > 10  # a drawing, not a blank
        env.step(int(np.flatnonzero(info["action_mask"])[0]))
        assert (env.render() != first).any()  # the move shows
        venv.reset(seed=3)
        frames = venv.render()
        assert isinstance(frames, tuple) and len(frames) == 2
        assert (frames[0] == first).all()  # game 0 of seed 3 is SpiderEnv's seed 3
        assert (frames[1] != frames[0]).any()
    finally:
        env.close()
        venv.close()


def test_the_moves_kept_for_copies_are_small(server):
    """A SpiderEnv keeps its episode's moves, to replay them in a copy: a
    list of ints took about 40 bytes a step, which an episode without a
    step limit (max_steps=-1, up to 2**30 steps) grows for ever. Now two;
    a copy still replays them."""
    import gc
    import tracemalloc

    env = SpiderEnv(address=server, max_steps=-1)
    try:
        _, info = env.reset(seed=1)
        illegal = int(np.flatnonzero(info["action_mask"] == 0)[-1])  # noop: the game stays as it is
        for _ in range(200):
            env.step(illegal)
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            for _ in range(5_000):
                env.step(illegal)
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - base
        finally:
            tracemalloc.stop()
        assert grown < 5_000 * 12, f"{grown / 5_000:.1f} bytes a step"  # two, and what tracemalloc sees besides
        legal = int(np.flatnonzero(info["action_mask"])[0])
        obs, *_ = env.step(legal)
        twin = copy.deepcopy(env)
        try:
            assert (twin.action_masks() == env.action_masks()).all()
            assert twin.step(legal)[0].tobytes() == env.step(legal)[0].tobytes()
        finally:
            twin.close()
    finally:
        env.close()


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_copies_play_on_alike(server, how):
    """A copy replays to the same position, in its own game, and plays on
    exactly as the original, random generator included."""
    env = SpiderEnv(address=server, max_steps=30)
    rng = np.random.default_rng(5)
    try:
        obs, info = env.reset(seed=8)
        for _ in range(35):  # past an episode end: the copy goes through two episodes
            obs, r, term, trunc, info = env.step(int(masked_random(rng, info["action_mask"][None])[0]))
            if term or trunc:
                obs, info = env.reset()
        twin = copy.deepcopy(env) if how == "deepcopy" else pickle.loads(pickle.dumps(env))
        try:
            assert twin.client is not env.client
            assert (twin.action_masks() == env.action_masks()).all()
            assert twin.np_random.integers(1 << 30) == env.np_random.integers(1 << 30)
            for _ in range(40):
                a = int(masked_random(rng, info["action_mask"][None])[0])
                o1, r1, t1, u1, info = env.step(a)
                o2, r2, t2, u2, _ = twin.step(a)
                assert (o1 == o2).all() and (r1, t1, u1) == (r2, t2, u2)
                if t1 or u1:
                    o1, info = env.reset()
                    assert (o1 == twin.reset()[0]).all()
        finally:
            twin.close()
    finally:
        env.close()


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
@pytest.mark.parametrize("given", ["address", "server"])
def test_copies_keep_the_spec(server, how, given):
    """A copy of an env made by gymnasium.make keeps its spec (the env's
    own, which the wrappers' spec is built from): it was None. A server
    given as the address is not carried (the copy starts its own), nor
    named in the copy's spec."""
    env = gym.make("Spider-v0", address=server.address if given == "address" else server, max_steps=30)
    try:
        env.reset(seed=1)
        inner = env.unwrapped
        twin = copy.deepcopy(inner) if how == "deepcopy" else pickle.loads(pickle.dumps(inner))
        try:
            assert twin.spec is not None and twin.spec.id == "Spider-v0"
            assert twin.spec.kwargs["max_steps"] == 30
            assert twin.spec.kwargs["address"] == (server.address if given == "address" else None)
            assert twin.spec.kwargs.keys() == inner.spec.kwargs.keys()
        finally:
            twin.close()
    finally:
        env.close()


def test_a_shared_server_goes_through_gymnasiums_copies(server):
    """A SpiderServer given as the address (python/README.md: "or a
    SpiderServer to share one server") goes through what gymnasium copies:
    the spec its checker hands out (it was None, with a warning), a remake
    from the spec and check_env's remakes (TypeError: cannot be pickled),
    each on the same server."""
    from gymnasium.utils.env_checker import check_env

    env = gym.make("Spider-v0", address=server, max_steps=30)
    venv = gym.make_vec("Spider-v0", num_envs=2, vectorization_mode="vector_entry_point", address=server)
    made = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the checker's "an exception occurred while copying the spec"
            spec = env.spec
        assert spec is not None and spec.kwargs["address"] is server
        check_env(env.unwrapped, skip_render_check=True)
        made += [gym.make(env.spec), gym.make_vec(venv.spec)]
        for twin in made:
            assert twin.unwrapped.spider_spec["config"].max_steps in (30, 1000)
            twin.reset(seed=1)
        assert made[0].unwrapped.spider_spec["config"].max_steps == 30
        assert server.running
    finally:
        for e in [env, venv, *made]:
            e.close()
    assert server.running  # the envs close their connections, not the server


@pytest.mark.parametrize("vector", [False, True])
def test_a_spec_with_a_config_goes_through_json(server, vector):
    """EnvSpec.to_json turns a SpiderConfig given as config into a dict
    (dataclasses.asdict); the env made from EnvSpec.from_json takes it back
    as the same game (it raised TypeError: config must be a SpiderConfig)."""
    from gymnasium.envs.registration import EnvSpec

    given = SpiderConfig(suits=2, max_steps=40)
    if vector:
        env = gym.make_vec(
            "Spider-v0", num_envs=2, vectorization_mode="vector_entry_point", address=server.address, config=given
        )
    else:
        env = gym.make("Spider-v0", address=server.address, config=given)
    try:
        spec = EnvSpec.from_json(env.spec.to_json())
        assert isinstance(spec.kwargs["config"], dict)
        twin = gym.make_vec(spec) if vector else gym.make(spec)
        try:
            assert twin.unwrapped.config == env.unwrapped.config
            assert twin.unwrapped.config.suits == 2 and twin.unwrapped.config.max_steps == 40
        finally:
            twin.close()
    finally:
        env.close()


def test_vector_env_says_why_it_cannot_be_copied(server):
    venv = SpiderVectorEnv(2, address=server)
    try:
        with pytest.raises(TypeError, match="cannot be pickled or copied"):
            pickle.dumps(venv)
        with pytest.raises(TypeError, match="cannot be pickled or copied"):
            copy.deepcopy(venv)
    finally:
        venv.close()


def test_wheel_runs_without_go_or_repository(tmp_path, spider_bin):
    """pip wheel ./python gives a platform wheel holding the server; installed
    away from the repository, with no Go and no SPIDER_BIN, it plays."""
    wheels = tmp_path / "wheels"
    build_env = {**os.environ, "SPIDER_BIN": spider_bin}  # package this binary: no second compile
    p = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(REPO / "python")],
        env=build_env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    (wheel,) = wheels.glob("*.whl")
    assert wheel.name.endswith("-py3-none-linux_x86_64.whl"), wheel.name  # a platform wheel
    site = tmp_path / "site"
    p = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    script = textwrap.dedent(
        """
        import shutil, spider_env
        from spider_env import SpiderEnv, _server
        assert shutil.which("go") is None
        print(_server.find_binary())
        env = SpiderEnv()
        obs, info = env.reset(seed=1)
        env.step(int(info["action_mask"].argmax()))
        env.close()
        """
    )
    run_env = {k: v for k, v in os.environ.items() if k not in ("SPIDER_BIN", "PYTHONPATH")}
    run_env["PATH"] = str(Path(sys.executable).parent)  # python, and no go
    run_env["PYTHONPATH"] = str(site)
    p = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(site / "spider_env" / "bin" / "spider")
