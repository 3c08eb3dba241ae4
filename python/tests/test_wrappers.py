"""spider_env.wrappers and spider_env.rllib.env_creator without ray
(gymnasium only)."""

from __future__ import annotations

import os
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import spider_env.rllib
from conftest import masked_sample
from spider_env import NUM_ACTIONS, SpiderConfig, SpiderEnv, SpiderVectorEnv
from spider_env.rllib import env_creator
from spider_env.wrappers import MaskInObservation, VectorMaskInObservation


@pytest.mark.parametrize("float32", [False, True])
def test_mask_in_observation(server, float32):
    env = MaskInObservation(SpiderEnv(max_steps=15, address=server.address), float32=float32)
    space = env.observation_space
    assert isinstance(space, gym.spaces.Dict) and set(space.spaces) == {"observations", "action_mask"}
    assert space["action_mask"] == gym.spaces.Box(0.0, 1.0, (NUM_ACTIONS,), np.float32)
    assert space["observations"].dtype == (np.float32 if float32 else np.uint8)
    obs, info = env.reset(seed=4)
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(40):
        assert space.contains(obs)
        np.testing.assert_array_equal(obs["action_mask"], info["action_mask"].astype(np.float32))
        np.testing.assert_array_equal(obs["action_mask"] > 0, env.unwrapped.action_masks())
        a = int(masked_sample(rng, obs["action_mask"][None])[0])
        obs, reward, terminated, truncated, info = env.step(a)
        assert not info["illegal"]
        if terminated or truncated:
            assert (obs["action_mask"] == 1.0).all()  # an ended episode's mask: all ones
            ended += 1
            obs, info = env.reset()
    assert ended >= 2
    env.close()


@pytest.mark.filterwarnings("ignore:.*is different from the unwrapped version")
def test_mask_in_observation_passes_gymnasium_check_env(server):
    env = MaskInObservation(SpiderEnv(max_steps=15, address=server.address), float32=True)
    check_env(env, skip_render_check=True)
    env.close()


@pytest.mark.filterwarnings("ignore:.*is different from the unwrapped version")
def test_mask_in_observation_is_made_again_from_its_spec(server):
    """The wrappers record their arguments, as Gymnasium's own do, so that
    gymnasium.make(env.spec) and check_env (which makes the env again to
    check close) rebuild a wrapped gymnasium.make env; before, both raised
    that the wrapper does not inherit RecordConstructorArgs."""
    env = MaskInObservation(gym.make("Spider-v0", max_steps=15, address=server.address), float32=True)
    again = gym.make(env.spec)
    try:
        assert isinstance(again, MaskInObservation) and again.observation_space == env.observation_space
        assert again.unwrapped.config == env.unwrapped.config
        check_env(env, skip_render_check=True)
    finally:
        env.close()
        again.close()
    venv = VectorMaskInObservation(SpiderVectorEnv(2, address=server.address), float32=True)
    assert isinstance(venv, gym.utils.RecordConstructorArgs) and venv._saved_kwargs == {
        "float32": True,
        "layout": "rllib",
    }
    venv.close()


@pytest.mark.filterwarnings("ignore:.*is different from the unwrapped version")
def test_tianshou_layout(server):
    """layout="tianshou" gives {"obs": obs, "mask": bool mask}, what
    Tianshou's masked policies read as batch.obs.obs and batch.obs.mask;
    the default's keys and float32 mask did not fit them, though the
    module's docstring said they did. Recorded in the spec, so the wrapped
    env is made again the same."""
    env = MaskInObservation(gym.make("Spider-v0", max_steps=6, address=server.address), layout="tianshou")
    space = env.observation_space
    assert set(space.spaces) == {"obs", "mask"} and space["mask"] == gym.spaces.Box(0, 1, (NUM_ACTIONS,), np.bool_)
    obs, info = env.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(8):
        assert space.contains(obs) and obs["mask"].dtype == np.bool_
        np.testing.assert_array_equal(obs["mask"], info["action_mask"] != 0)
        obs, _, terminated, truncated, info = env.step(int(masked_sample(rng, obs["mask"][None])[0]))
        if terminated or truncated:
            assert obs["mask"].all()
            obs, info = env.reset()
    again = gym.make(env.spec)
    try:
        assert isinstance(again, MaskInObservation) and again.observation_space == space
        check_env(env, skip_render_check=True)
    finally:
        env.close()
        again.close()
    inner = SpiderVectorEnv(2, max_steps=2, autoreset_mode="same-step", address=server.address)
    envs = VectorMaskInObservation(inner, layout="tianshou")
    obs, infos = envs.reset(seed=3)
    assert obs["mask"].dtype == np.bool_ and obs["obs"].shape[0] == 2
    np.testing.assert_array_equal(obs["mask"], infos["action_mask"] != 0)
    for _ in range(2):
        obs, _, terminated, truncated, infos = envs.step(masked_sample(np.random.default_rng(0), obs["mask"]))
        assert envs.observation_space.contains(obs)
    assert (terminated | truncated).all()
    for o in infos["final_obs"]:
        assert envs.single_observation_space.contains(o) and o["mask"].all(), o
    envs.close()
    plain = SpiderEnv(address=server.address)
    for bad in ("torchrl", None, 1):
        with pytest.raises(ValueError, match="layout must be one of 'rllib', 'tianshou'"):
            MaskInObservation(plain, layout=bad)  # type: ignore[arg-type]
    plain.close()


def test_env_creator_env_copies_and_opens_after_close():
    """An env_creator env pickles (the copy plays on, on its own server)
    and opens anew on a reset after close, as a SpiderEnv does; before, the
    shared server could not be pickled, and a reset after close called the
    stopped server."""
    env = env_creator({"suits": 1, "max_steps": 50})
    try:
        obs, _ = env.reset(seed=3)
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        copy = pickle.loads(pickle.dumps(env))
        try:
            a = int(np.flatnonzero(env.unwrapped.action_masks())[0])
            mine, theirs = env.step(a)[0], copy.step(a)[0]
            assert (mine["observations"] == theirs["observations"]).all()
            assert copy.unwrapped.client.address != env.unwrapped.client.address
        finally:
            copy.close()
        env.close()
        assert spider_env.rllib._shared is None  # the last user stopped it
        again, _ = env.reset(seed=3)
        assert (again["observations"] == obs["observations"]).all()
        assert spider_env.rllib._shared is not None and spider_env.rllib._shared[1].running
    finally:
        env.close()
    assert spider_env.rllib._shared is None


def test_env_creator_envs_recover_from_a_killed_server():
    """The process's shared server killed under two env_creator envs: a
    step fails, and a reset opens anew on a new server, as a SpiderEnv whose
    own server died does; before, every reset called the dead server."""
    import signal

    from spider_env import SpiderError

    a, b = env_creator({"suits": 1, "max_steps": 50}), env_creator({"suits": 1, "max_steps": 50})
    try:
        obs, _ = a.reset(seed=3)
        b.reset(seed=4)
        dead = spider_env.rllib._shared[1]
        os.kill(dead.pid, signal.SIGKILL)
        dead.proc.wait(timeout=10)
        with pytest.raises(SpiderError):
            a.step(int(np.flatnonzero(obs["action_mask"])[0]))
        again, _ = a.reset(seed=3)
        assert (again["observations"] == obs["observations"]).all()
        b.reset(seed=4)
        server = spider_env.rllib._shared[1]
        assert server is not dead and server.running and spider_env.rllib._users == 2
        assert not os.path.exists(dead.socket_path)
    finally:
        a.close()
        b.close()
    assert spider_env.rllib._shared is None


class _EnvContext(dict):
    """What RLlib hands an env creator in sync mode: the config, and the
    runner's index."""

    def __init__(self, config: dict, worker_index: int):
        super().__init__(config)
        self.worker_index = worker_index


def test_env_creator_spreads_runners_seeds(server):
    """With .debugging(seed=S), RLlib resets runner w's envs with S + w,
    and a vector env seeds its game i with that + i: runner 1's game 1 and
    runner 2's game 0 played one deal stream. Every game of every runner
    now has its own."""
    cfg = {"suits": 1, "address": server.address}
    deals = set()
    for w in (1, 2):  # sync mode: runner w's env i reset with S + w + i
        for i in (0, 1):
            env = env_creator(_EnvContext(cfg, w))
            obs, _ = env.reset(seed=w + i)
            deals.add(obs["observations"].tobytes())
            env.close()
    assert len(deals) == 4
    deals.clear()
    for w in (1, 2):  # vector mode: runner w's batch reset with S + w
        venv = env_creator({**cfg, "num_envs": 2})
        obs, _ = venv.reset(seed=w)
        deals.update(o.tobytes() for o in obs["observations"])
        venv.close()
    assert len(deals) == 4


def test_env_creator_refuses_seeds_its_spread_would_wrap(server):
    """The spread seed * k + i wrapped at 2**63: seeds 0 and 2**62 dealt a
    batch of 2 the same games, and seeds no other env takes (2**64 + 7,
    2**70) were played. Now the largest seed whose spread fits plays, the
    next is refused, and distinct seeds deal distinct games."""
    cfg = {"suits": 1, "address": server.address}
    venv = env_creator({**cfg, "num_envs": 2})
    try:
        a, _ = venv.reset(seed=0)
        b, _ = venv.reset(seed=2**62)
        assert not np.array_equal(a["observations"], b["observations"])
        top = (2**64 - 2) // 2
        venv.reset(seed=top)  # games 2**64-2 and 2**64-1
        for bad in (top + 1, 2**64 + 7, -1):
            with pytest.raises(ValueError, match=r"2\*\*64-1|outside 0 to"):
                venv.reset(seed=bad)
    finally:
        venv.close()
    env = env_creator(_EnvContext(cfg, 3))
    try:
        p, _ = env.reset(seed=0)
        q, _ = env.reset(seed=2**47)
        assert not np.array_equal(p["observations"], q["observations"])
        env.reset(seed=(2**64 - 2**16) // 2**16)
        with pytest.raises(ValueError, match="at most"):
            env.reset(seed=2**48)
        with pytest.raises(ValueError, match="outside 0 to"):
            env.reset(seed=2**70)
    finally:
        env.close()


def test_log_episode_metrics_counts_a_step_once():
    """An episode cut into chunks (RLlib's sample) repeats the boundary
    step's info at the start of the next chunk: an illegal move there was
    counted twice."""

    class Chunk:
        def __init__(self, infos: list[dict]):
            self._infos = infos

        def get_infos(self) -> list[dict]:
            return self._infos

    class Logger:
        def __init__(self) -> None:
            self.logged: dict = {}

        def log_value(self, key: tuple, value: float, **kwargs: object) -> None:
            self.logged[key] = value

    first = Chunk([{}, {"illegal": False}, {"illegal": True}])
    last = Chunk([{"illegal": True}, {"illegal": False, "score": 480, "spider_episode": {"won": False, "runs": 1}}])
    log = Logger()
    spider_env.rllib.log_episode_metrics(episode=last, metrics_logger=log, prev_episode_chunks=[first])
    assert log.logged[("spider", "illegal")] == 1
    assert log.logged[("spider", "score")] == 480 and log.logged[("spider", "runs")] == 1
    # The statistics under another episode_key are found too.
    renamed = Chunk([{"score": 700, "stats": {"r": 2.0, "l": 90, "won": True, "runs": 8}}])
    log = Logger()
    spider_env.rllib.log_episode_metrics(episode=renamed, metrics_logger=log)
    assert log.logged[("spider", "won")] == 1.0 and log.logged[("spider", "runs")] == 8


def test_vector_mask_in_observation(server):
    envs = VectorMaskInObservation(SpiderVectorEnv(3, max_steps=10, address=server.address), float32=True)
    assert envs.single_observation_space["observations"].dtype == np.float32
    obs, infos = envs.reset(seed=9)
    rng = np.random.default_rng(1)
    for _ in range(25):
        assert envs.observation_space.contains(obs)
        assert obs["action_mask"].shape == (3, NUM_ACTIONS)
        np.testing.assert_array_equal(obs["action_mask"], infos["action_mask"].astype(np.float32))
        obs, rewards, terminated, truncated, infos = envs.step(masked_sample(rng, obs["action_mask"]))
        assert not infos["illegal"].any()
    envs.close()


def test_vector_mask_in_observation_wraps_final_observations(server):
    """Under same-step autoreset an ended game's final observation is a
    Dict of the wrapped space too, as Gymnasium's observation wrappers
    convert it (it was the bare array)."""
    inner = SpiderVectorEnv(2, max_steps=2, autoreset_mode="same-step", obs="float32", address=server.address)
    envs = VectorMaskInObservation(inner)
    obs, infos = envs.reset(seed=3)
    for _ in range(2):
        obs, _, terminated, truncated, infos = envs.step(masked_sample(np.random.default_rng(0), obs["action_mask"]))
    assert (terminated | truncated).all() and infos["_final_obs"].all()
    for o in infos["final_obs"]:
        assert envs.single_observation_space.contains(o), o
        assert (o["action_mask"] == 1).all()
    # Each its own: a learner that writes one changes no other.
    assert infos["final_obs"][0]["action_mask"] is not infos["final_obs"][1]["action_mask"]
    envs.close()


def test_env_creator_defaults_and_keys(server):
    env = env_creator({"suits": 1, "max_steps": 20})
    assert isinstance(env, MaskInObservation)
    assert env.unwrapped.config.obs == "float32" and env.unwrapped.config.max_steps == 20
    assert env.observation_space["observations"].dtype == np.float32
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    # A second env of the same process shares the process's server.
    env2 = env_creator({"obs": "compact"})
    assert env2.observation_space["observations"].dtype == np.float32  # cast (float32 defaults to True)
    assert env2.unwrapped.client.address == env.unwrapped.client.address
    env3 = env_creator({"obs": "compact", "float32": False, "address": server.address})
    assert env3.observation_space["observations"].dtype == np.uint8
    assert env3.unwrapped.client.address == server.address
    with pytest.raises(TypeError, match="unknown env_config key 'suit'"):
        env_creator({"suit": 1})
    # A shared server's replies may be slow to come: the timeout is the
    # env's; workers are a batch's, so only a vector env's.
    slow = env_creator({"timeout": 300, "address": server.address})
    assert slow.unwrapped.client._timeout == 300
    slow.close()
    with pytest.raises(TypeError, match="vector_entry_point"):
        env_creator({"workers": 2, "address": server.address})
    default = env_creator({"workers": None, "address": server.address})  # None: the default, as absent
    default.close()
    venv = env_creator({"num_envs": 3, "max_steps": 20, "workers": 1})
    assert (
        isinstance(venv, VectorMaskInObservation) and venv.num_envs == 3 and venv.unwrapped.spider_spec["workers"] == 1
    )
    assert venv.unwrapped.client.address == env.unwrapped.client.address
    # The process's server stops with the last env using it, its socket removed.
    shared = spider_env.rllib._shared[1]
    for e in (env, env2, env3):
        e.close()
    assert shared.running
    venv.close()
    assert not shared.running and shared.socket_path and not os.path.exists(shared.socket_path)
    assert spider_env.rllib._shared is None


def test_env_creator_takes_a_spider_config(server):
    """env_config "config" is the game as one SpiderConfig, the type that
    travels everywhere else, or a dict of its fields (a config file's, a
    Tune space's); game options beside it are laid over it, and the
    float32 observation default yields to an obs it names."""
    made = []
    try:
        for game in (SpiderConfig(suits=2, max_steps=30), {"suits": 2, "max_steps": 30}):
            env = env_creator({"config": game, "address": server.address})
            made.append(env)
            assert (env.unwrapped.config.suits, env.unwrapped.config.max_steps) == (2, 30)
            assert env.unwrapped.config.obs == "float32"  # the env_creator default still
        env = env_creator({"config": SpiderConfig(suits=2, obs="compact"), "max_steps": 40, "float32": False})
        made.append(env)
        config = env.unwrapped.config
        assert (config.suits, config.obs, config.max_steps) == (2, "compact", 40)
        assert env.observation_space["observations"].dtype == np.uint8
        venv = env_creator({"config": {"suits": 4}, "num_envs": 2, "address": server.address})
        made.append(venv)
        assert venv.unwrapped.config.suits == 4 and venv.unwrapped.config.obs == "float32"
        with pytest.raises(TypeError, match="unexpected keyword argument 'suit': unknown game option"):
            env_creator({"config": {"suit": 2}})
        with pytest.raises(TypeError, match='"config" must be a SpiderConfig'):
            env_creator({"config": "suits=2"})
    finally:
        for e in made:
            e.close()


class _MaskMethodEnv(gym.Env[np.ndarray, int]):
    """A Discrete(3) env whose infos carry no action_mask: its legal actions
    (0 and 2 after a reset, then 1 only) come from action_masks(), as a
    non-spider env that sb3-contrib's MaskablePPO reads says them."""

    observation_space = gym.spaces.Box(0, 9, (2,), np.uint8)
    action_space = gym.spaces.Discrete(3)

    def __init__(self) -> None:
        self._masks = np.array([True, False, True])

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._masks = np.array([True, False, True])
        return np.zeros(2, np.uint8), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._masks = np.array([False, True, False])
        return np.ones(2, np.uint8), 0.0, False, False, {}

    def action_masks(self) -> np.ndarray:
        return self._masks


def test_mask_in_observation_falls_back_to_action_masks():
    """An env whose infos have no action_mask gives its mask through
    action_masks(), as the wrapper's docstring says, after each reset and
    each step: not a mask of NaN or an error."""
    env = MaskInObservation(_MaskMethodEnv(), float32=True)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs["action_mask"], np.array([1.0, 0.0, 1.0], np.float32))
    assert obs["action_mask"].dtype == np.float32 and obs["observations"].dtype == np.float32
    obs, *_ = env.step(0)
    np.testing.assert_array_equal(obs["action_mask"], np.array([0.0, 1.0, 0.0], np.float32))
    assert env.observation_space.contains(obs)


class _MaskMethodVectorEnv(gym.vector.VectorEnv):
    """Two games of Discrete(3) whose infos carry no action_mask: the masks
    come from action_masks(), one row a game."""

    def __init__(self) -> None:
        self.num_envs = 2
        self.single_observation_space = gym.spaces.Box(0, 9, (2,), np.uint8)
        self.single_action_space = gym.spaces.Discrete(3)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, 2)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, 2)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict | None = None
    ) -> tuple[np.ndarray, dict]:
        return np.zeros((2, 2), np.uint8), {}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        return np.ones((2, 2), np.uint8), np.zeros(2), np.zeros(2, bool), np.zeros(2, bool), {}

    def action_masks(self) -> np.ndarray:
        return np.array([[True, False, True], [False, True, False]])


def test_vector_mask_in_observation_falls_back_to_action_masks():
    """The vector wrapper too reads the masks from action_masks() when the
    infos have none, one row a game."""
    envs = VectorMaskInObservation(_MaskMethodVectorEnv())
    want = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], np.float32)
    obs, _ = envs.reset(seed=0)
    np.testing.assert_array_equal(obs["action_mask"], want)
    assert obs["action_mask"].dtype == np.float32 and envs.observation_space.contains(obs)
    obs, *_ = envs.step(np.zeros(2, np.int64))
    np.testing.assert_array_equal(obs["action_mask"], want)


def test_vector_mask_in_observation_keeps_the_games_a_masked_reset_left(server):
    """Over Gymnasium's SyncVectorEnv a masked reset gives infos only for
    the games reset, the other rows of action_mask zero-filled: the wrapper
    keeps those games' last masks (it gave them no legal move)."""
    from gymnasium.vector import AutoresetMode

    envs = VectorMaskInObservation(
        gym.make_vec(
            "Spider-v0",
            num_envs=3,
            vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": AutoresetMode.DISABLED},
            illegal="lose",
            address=server.address,
        )
    )
    try:
        obs, _ = envs.reset(seed=4)
        games = [e.unwrapped for e in envs.unwrapped.envs]
        legal = [int(np.flatnonzero(g.action_masks())[0]) for g in games]
        illegal = int(np.flatnonzero(~games[0].action_masks())[0])
        obs, _, term, _, _ = envs.step(np.array([illegal, legal[1], legal[2]]))
        assert term[0] and not term[1:].any()
        obs, infos = envs.reset(options={"reset_mask": np.array([True, False, False])})
        assert not infos["_action_mask"][1:].any(), "the games left alone gave no info"
        want = np.stack([g.action_masks() for g in games]).astype(np.float32)
        np.testing.assert_array_equal(obs["action_mask"], want)
        assert (obs["action_mask"][1:].sum(axis=1) > 0).all()
    finally:
        envs.close()
