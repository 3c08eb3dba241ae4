"""spider_env.sb3.SpiderVecEnv against Stable-Baselines3's VecEnv API, and
sb3-contrib's MaskablePPO on it (marker sb3: needs torch)."""

from __future__ import annotations

import copy
import os
import warnings

import numpy as np
import pytest

from conftest import masked_sample

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.evaluation import evaluate_policy
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, VecNormalize

from spider_env import NUM_ACTIONS, SpiderEnv, SpiderError, SpiderServer, SpiderVectorEnv
from spider_env.sb3 import SpiderVecEnv

pytestmark = [pytest.mark.sb3]

torch.set_num_threads(1)  # 2 threads on 2 busy cores run many times slower than 1


@pytest.mark.limit(60)
def test_vecenv_api(server):
    n = 4
    venv = SpiderVecEnv(n, max_steps=5, address=server.address)
    assert isinstance(venv, VecEnv) and venv.num_envs == n
    assert venv.observation_space.shape == (806,) and venv.observation_space.dtype == np.uint8
    assert venv.action_space.n == NUM_ACTIONS
    assert venv.seed(7) == [7, 8, 9, 10]
    obs = venv.reset()
    assert isinstance(obs, np.ndarray) and obs.shape == (n, 806) and obs.dtype == np.uint8
    assert all(venv.observation_space.contains(o) for o in obs)
    assert [info["score"] for info in venv.reset_infos] == [500] * n

    # The reference: the same seeds in a SpiderVectorEnv (same-step autoreset)
    # and in single SpiderEnvs, fed the same actions.
    ref = SpiderVectorEnv(n, max_steps=5, address=server.address, autoreset_mode="same-step")
    r_obs, r_info = ref.reset(seed=7)
    singles = [SpiderEnv(max_steps=5, address=server.address) for _ in range(n)]
    s_obs = [e.reset(seed=7 + i)[0] for i, e in enumerate(singles)]
    np.testing.assert_array_equal(obs, r_obs)
    np.testing.assert_array_equal(obs, np.stack(s_obs))

    # Masks: env_method("action_masks") is one row per game; sb3-contrib stacks them.
    assert venv.has_attr("action_masks") and is_masking_supported(venv)
    rows = venv.env_method("action_masks")
    assert len(rows) == n and all(r.shape == (NUM_ACTIONS,) and r.dtype == np.bool_ for r in rows)
    np.testing.assert_array_equal(get_action_masks(venv), ref.action_masks())
    np.testing.assert_array_equal(venv.env_method("action_masks", indices=[2])[0], ref.action_masks()[2])

    rng = np.random.default_rng(0)
    for t in range(7):
        actions = masked_sample(rng, get_action_masks(venv))
        venv.step_async(actions)
        assert venv.client.pending  # sent, not yet received: step_async does not wait
        assert venv.action_masks().shape == (n, NUM_ACTIONS)  # answered locally while in flight
        obs, rewards, dones, infos = venv.step_wait()
        r_obs, r_rew, r_term, r_trunc, r_info = ref.step(actions)
        single = [e.step(int(a)) for e, a in zip(singles, actions, strict=True)]
        assert obs.shape == (n, 806) and rewards.shape == (n,) and rewards.dtype == np.float32
        assert dones.shape == (n,) and dones.dtype == np.bool_
        assert isinstance(infos, list) and len(infos) == n and all(isinstance(i, dict) for i in infos)
        np.testing.assert_array_equal(obs, r_obs)
        np.testing.assert_array_equal(rewards, r_rew)
        np.testing.assert_array_equal(get_action_masks(venv), ref.action_masks())
        if t == 4:  # max_steps=5: every game is truncated now
            assert dones.all()
            for i, info in enumerate(infos):
                last_obs, _, term, trunc, s_info = single[i]
                assert trunc and not term
                assert info["TimeLimit.truncated"] is True
                np.testing.assert_array_equal(info["terminal_observation"], last_obs)
                assert info["episode"]["l"] == 5 and info["episode"]["r"] == pytest.approx(
                    s_info["spider_episode"]["r"]
                )
                assert info["spider_episode"] == s_info["spider_episode"]
                assert info["is_success"] is False and info["score"] == s_info["score"]
                assert venv.reset_infos[i]["score"] == 500 and venv.reset_infos[i]["moves"] == 0
            # The returned observation is the new episode's first (same-step).
            s_obs = [e.reset()[0] for e in singles]
            np.testing.assert_array_equal(obs, np.stack(s_obs))
        else:
            assert not dones.any()
            assert all(info["TimeLimit.truncated"] is False and "terminal_observation" not in info for info in infos)
            np.testing.assert_array_equal(obs, np.stack([s[0] for s in single]))

    # get_attr / set_attr / env_is_wrapped / seed semantics.
    assert venv.get_attr("render_mode") == [None] * n
    assert venv.get_attr("index", indices=[1, 3]) == [1, 3]
    assert venv.get_attr("config")[0].max_steps == 5
    venv.set_attr("curriculum_level", 3, indices=1)
    assert venv.get_attr("curriculum_level", indices=[1]) == [3]
    assert not venv.has_attr("curriculum_level")  # the other games lack it
    with pytest.raises(AttributeError):
        venv.set_attr("observation_space", None)
    assert venv.env_is_wrapped(Monitor) == [False] * n
    venv.seed(7)
    np.testing.assert_array_equal(venv.reset(), ref.reset(seed=7)[0])
    # One seed per game (the extension): the deals of those seeds.
    assert venv.seed([3, 9, 4, 1]) == [3, 9, 4, 1]
    dealt = [e.reset(seed=s)[0] for e, s in zip(singles, [3, 9, 4, 1], strict=True)]
    np.testing.assert_array_equal(venv.reset(), np.stack(dealt))
    # A reset while a step is in flight cancels the step.
    venv.step_async(masked_sample(rng, venv.action_masks()))
    venv.seed(7)
    np.testing.assert_array_equal(venv.reset(), ref.reset(seed=7)[0])
    assert not venv.client.pending
    with pytest.raises(RuntimeError, match="without step_async"):
        venv.step_wait()
    # Actions are checked as SpiderEnv checks them, before anything is sent;
    # a column of ids is taken as a row.
    ok = masked_sample(rng, venv.action_masks())
    for bad, err in [
        (np.ones(n, bool), TypeError),
        (ok.astype(np.float16), TypeError),
        (np.full(n, NUM_ACTIONS), ValueError),
        (np.full(n, -1), ValueError),
        (np.full(n, 2**63, np.uint64), ValueError),
        (ok[:3], ValueError),
    ]:
        with pytest.raises(err):
            venv.step_async(bad)
        assert not venv.client.pending
    venv.step_async(ok.reshape(n, 1))
    obs, *_ = venv.step_wait()
    np.testing.assert_array_equal(obs, ref.step(ok)[0])
    with pytest.raises(TypeError, match="cannot be pickled or copied"):
        copy.deepcopy(venv)
    for e in (venv, ref, *singles):
        e.close()
    venv.close()  # idempotent
    # Closed, it says so as every other surface does (a RuntimeError before).
    with pytest.raises(SpiderError) as closed:
        venv.reset()
    assert closed.value.code == "closed"


@pytest.mark.limit(60)
def test_vecenv_checks_its_timeout_before_starting_a_server(monkeypatch):
    """A bad timeout is refused naming it before SpiderVecEnv starts its
    own server."""
    from spider_env import envs

    class NoServer(envs.SpiderServer):
        def __init__(self, *args, **kwargs):  # pylint: disable=super-init-not-called
            raise AssertionError("a server was started")

    monkeypatch.setattr(envs, "SpiderServer", NoServer)  # where the env's backend starts one
    with pytest.raises(TypeError, match="timeout must be a positive number of seconds"):
        SpiderVecEnv(2, timeout="5")


def test_wrappers_and_render(server):
    venv = VecNormalize(VecMonitor(SpiderVecEnv(2, max_steps=4, obs="float32", address=server.address)))
    venv.seed(1)
    obs = venv.reset()
    assert obs.shape == (2, venv.observation_space.shape[0]) and obs.dtype == np.float32
    episodes = []
    for _ in range(10):
        obs, rewards, dones, infos = venv.step(masked_sample(np.random.default_rng(0), get_action_masks(venv)))
        episodes += [info["episode"] for info in infos if "episode" in info]
        for info in infos:
            if "terminal_observation" in info:  # VecNormalize normalizes it too
                assert info["terminal_observation"].shape == obs.shape[1:]
    assert len(episodes) == 4 and all(ep["l"] == 4 for ep in episodes)
    venv.close()

    pictures = SpiderVecEnv(3, render_mode="rgb_array", address=server.address)
    # SB3's VecVideoRecorder reads the frame rate from the VecEnv: 30 fps without it.
    assert pictures.metadata["render_fps"] == SpiderEnv.metadata["render_fps"] == 4
    pictures.reset()
    images = pictures.get_images()
    assert len(images) == 3 and all(img.shape == (480, 640, 3) and img.dtype == np.uint8 for img in images)
    assert pictures.render().shape == (960, 1280, 3)  # SB3 tiles 3 pictures 2 x 2
    assert pictures.env_method("render", indices=0)[0].shape == (480, 640, 3)
    action, reason = pictures.env_method("hint", indices=0)[0]
    assert pictures.action_masks()[0, action] and isinstance(reason, str)
    pictures.close()


@pytest.mark.limit(60)
@pytest.mark.parametrize("render_mode", [None, "ansi", "rgb_array"])
def test_sb3_check_env_with_its_render_check(render_mode):
    """SB3's checker with its render check, which closes the env and then
    resets it again; the env starts its own server, as gym.make's would."""
    env = SpiderEnv(render_mode=render_mode, max_steps=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, warn=True, skip_render_check=False)
    env.close()
    assert not caught, [str(w.message) for w in caught]


@pytest.mark.limit(180)
def test_maskable_ppo_learns_and_plays_legal_moves(server):
    env = VecMonitor(SpiderVecEnv(4, max_steps=40, address=server.address))
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=2, seed=0, policy_kwargs={"net_arch": [64]}, device="cpu"
    )
    model.learn(total_timesteps=512)
    assert model.num_timesteps >= 512
    assert len(model.ep_info_buffer) > 0  # episodes were logged (rollout/ep_rew_mean)

    # Evaluation on games where an illegal action is an error: every move legal.
    eval_env = VecMonitor(SpiderVecEnv(2, max_steps=40, illegal="error", address=server.address))
    eval_env.seed(100)
    rewards, lengths = evaluate_policy(model, eval_env, n_eval_episodes=4, return_episode_rewards=True, warn=False)
    assert len(rewards) == 4 and all(length == 40 or length < 40 for length in lengths)

    # Masked predict, stochastic too, on fresh games: legal every time.
    obs = eval_env.reset()
    for _ in range(60):
        masks = get_action_masks(eval_env)
        actions, _ = model.predict(obs, action_masks=masks, deterministic=False)
        assert masks[np.arange(2), actions].all()
        obs, _, _, _ = eval_env.step(actions)
    # Without masks the policy would pick illegal moves, and the env says so.
    with pytest.raises(SpiderError, match=r"illegal|bad_action"):
        for _ in range(50):
            eval_env.step(np.full(2, NUM_ACTIONS - 1))  # the deal, illegal once the stock is gone
    env.close()
    eval_env.close()


@pytest.mark.limit(120)
def test_make_vec_env_with_maskable_ppo(server):
    """SB3's own make_vec_env on the registered id (it builds Monitor-wrapped
    SpiderEnvs in a DummyVecEnv), then MaskablePPO on it, unmodified."""
    from stable_baselines3.common.env_util import make_vec_env

    import spider_env  # noqa: F401  (registers Spider-v0)

    env = make_vec_env("Spider-v0", n_envs=2, seed=3, env_kwargs={"max_steps": 30, "address": server.address})
    try:
        assert is_masking_supported(env)
        env.reset()
        frames = env.get_images()  # SB3 renders with rgb_array
        assert len(frames) == 2 and all(f.shape == (480, 640, 3) for f in frames)
        model = MaskablePPO("MlpPolicy", env, n_steps=32, batch_size=32, n_epochs=1, seed=0, device="cpu")
        model.learn(total_timesteps=128)
        assert len(model.ep_info_buffer) > 0  # Monitor's episodes: info["episode"] was free
    finally:
        env.close()


@pytest.mark.limit(120)
def test_record_video(server, tmp_path):
    """Gymnasium's RecordVideo films a game from render_mode="rgb_array"."""
    pytest.importorskip("moviepy")
    import gymnasium as gym

    env = gym.wrappers.RecordVideo(
        gym.make("Spider-v0", render_mode="rgb_array", max_steps=20, address=server.address),
        str(tmp_path),
        episode_trigger=lambda e: e == 0,
    )
    rng = np.random.default_rng(0)
    try:
        obs, info = env.reset(seed=1)
        done = False
        while not done:
            obs, r, term, trunc, info = env.step(int(masked_sample(rng, info["action_mask"][None])[0]))
            done = term or trunc
    finally:
        env.close()
    videos = list(tmp_path.glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 1000


@pytest.mark.limit(60)
def test_step_is_one_request(server, monkeypatch):
    """step is step_async and step_wait as one request: the same results,
    and no gap between the halves where a Ctrl-C left the step in flight
    (the next step then raised "a step is in flight")."""
    a = SpiderVecEnv(3, max_steps=20, address=server.address)
    b = SpiderVecEnv(3, max_steps=20, address=server.address)
    try:
        a.seed(5)
        b.seed(5)
        np.testing.assert_array_equal(a.reset(), b.reset())
        for _ in range(25):  # past the step limit: games end and restart
            acts = np.argmax(a.action_masks(), axis=1)
            b.step_async(acts)
            want = b.step_wait()
            got = a.step(acts)
            for x, y in zip(got[:3], want[:3], strict=True):
                np.testing.assert_array_equal(x, y)
            assert [set(i) for i in got[3]] == [set(i) for i in want[3]]

        def interrupted(self):
            raise KeyboardInterrupt

        monkeypatch.setattr(SpiderVecEnv, "step_wait", interrupted)
        _, _, _, infos = a.step(np.argmax(a.action_masks(), axis=1))
        assert len(infos) == 3
    finally:
        a.close()
        b.close()


@pytest.mark.limit(60)
def test_timeout_and_seeding_through_the_algorithm(server):
    """SpiderVecEnv takes SpiderVectorEnv's timeout (it was an unknown
    game option), and an algorithm's seed= seeds the env as it is built,
    replacing a seed set before (so the examples seed through it)."""
    venv = SpiderVecEnv(2, timeout=300, address=server.address)
    try:
        assert venv.client._timeout == 300
        venv.seed(1)
        MaskablePPO("MlpPolicy", venv, n_steps=8, batch_size=8, seed=11, device="cpu")
        first = venv.reset()
        ref = SpiderVectorEnv(2, address=server.address)
        try:
            np.testing.assert_array_equal(first, ref.reset(seed=11)[0])
        finally:
            ref.close()
    finally:
        venv.close()


@pytest.mark.limit(60)
def test_a_dropped_vecenv_stops_its_server_at_once():
    """A SpiderVecEnv dropped unclosed stops the server it started as soon
    as the last reference goes, as a DummyVecEnv of SpiderEnv games does:
    its games held it in a cycle, which kept the server running until the
    cycle collector ran."""
    import gc

    def make() -> int:
        venv = SpiderVecEnv(2, max_steps=5)
        venv.reset()
        assert venv.get_attr("index") == [0, 1]
        return venv.server.proc.pid

    gc.disable()
    try:
        pid = make()
        # The server's finalizer has run: its process is reaped, not running.
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    finally:
        gc.enable()


@pytest.mark.limit(60)
def test_a_refused_step_is_raised_by_step_wait(server):
    """A step the server refuses (illegal="error") that a render or hint
    read early is raised by step_wait, where the step is; the render or
    hint goes ahead. Before, the render raised the step's error and
    step_wait said there was no step."""
    venv = SpiderVecEnv(2, max_steps=20, illegal="error", render_mode="ansi", address=server.address)
    try:
        venv.seed(3)
        venv.reset()
        masks = venv.action_masks()
        bad = np.array([int(np.flatnonzero(~masks[0])[0]), int(np.flatnonzero(masks[1])[0])])
        venv.step_async(bad)
        assert "score 500  moves 0" in venv.env_method("render", indices=[1])[0]
        with pytest.raises(SpiderError, match="illegal"):
            venv.step_wait()
        with pytest.raises(RuntimeError, match="step_wait without step_async"):
            venv.step_wait()
        # The env goes on: nothing was played.
        good = np.argmax(venv.action_masks(), axis=1)
        venv.step_async(good)
        assert isinstance(venv.hint(0)[0], int)
        _, _, _, infos = venv.step_wait()
        assert [i["moves"] for i in infos] == [1, 1]
    finally:
        venv.close()


def test_shm_over_tcp_says_why(server):
    """shm=True where no memory can be shared says why, not "None"."""
    tcp = SpiderServer(transport="tcp")
    try:
        with pytest.raises(ValueError, match="no shared memory with this server: the address is not a Unix socket"):
            SpiderVecEnv(1, shm=True, address=tcp.address)
    finally:
        tcp.close()
