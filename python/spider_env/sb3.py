"""Stable-Baselines3 support: :class:`SpiderVecEnv`, a native SB3 ``VecEnv``.

    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor
    from spider_env.sb3 import SpiderVecEnv

    env = VecMonitor(SpiderVecEnv(16, suits=1, obs="float32"))
    model = MaskablePPO("MlpPolicy", env, seed=0).learn(100_000)

Every game of the VecEnv lives in one server batch behind one connection:
a step is one request for all games, instead of the one request per game
that ``DummyVecEnv`` / ``SubprocVecEnv`` over :class:`~spider_env.SpiderEnv`
would send. ``step_async`` sends the request and returns at once;
``step_wait`` reads the reply (the server plays meanwhile).

Importing this module needs stable-baselines3 (``pip install
'./python[sb3]'`` from the repository root: PyPI's ``spider-env`` is
another project); ``import spider_env`` never does.
"""

from __future__ import annotations

import time
import warnings
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

from ._client import NUM_ACTIONS, Address, Client, ObsArray, SpiderError, StepReply, _seed, _whole
from ._server import SpiderServer
from .config import SpiderConfig
from .envs import (
    DEFAULT_TIMEOUT,
    IllegalPolicy,
    MaskForm,
    RenderMode,
    SpiderEnv,
    _action_ids,
    _Backend,
    _episode_key,
    _uncopyable,
)

# The ignores hold where stable-baselines3 is not installed (mypy sees Any);
# "unused-ignore" keeps them quiet where it is, or where pyproject.toml
# tells mypy to ignore the missing module.
try:
    from stable_baselines3.common.vec_env import VecEnv  # type: ignore[import-not-found, unused-ignore]
    from stable_baselines3.common.vec_env.base_vec_env import (  # type: ignore[import-not-found, unused-ignore]
        VecEnvIndices,
    )
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError(
        "spider_env.sb3 needs stable-baselines3, which spider-env does not require: "
        "pip install './python[sb3]' from the spider repository (or pip install stable-baselines3 sb3-contrib)"
    ) from e

__all__ = ["SpiderVecEnv"]

# What step returns: SB3's VecEnvStepReturn, narrowed to what this env
# gives, so that a type checker passes its observations to model.predict.
_StepReturn: TypeAlias = tuple[ObsArray, NDArray[np.float32], NDArray[np.bool_], list[dict[str, Any]]]


class _Game:
    """What ``get_attr`` / ``set_attr`` / ``env_method`` see as game ``index``
    of a :class:`SpiderVecEnv`: the per-environment object that
    ``DummyVecEnv`` would hold. Attributes set with ``set_attr`` stay here
    (they do not reach the server)."""

    def __init__(self, venv: SpiderVecEnv, index: int):
        # A weak reference: the venv holds its games, and a cycle would
        # keep a dropped venv, and the server it started, alive until
        # Python's cycle collector ran (DummyVecEnv's games hold no link
        # back, so a dropped one stops at once).
        self._ref = weakref.ref(venv)
        self._index = index

    @property
    def _venv(self) -> SpiderVecEnv:
        venv = self._ref()
        if venv is None:
            raise ReferenceError(f"game {self._index}'s SpiderVecEnv no longer exists")
        return venv

    # DummyVecEnv's games are gymnasium envs, whose spec third-party
    # callbacks read: these were not made by gymnasium.make.
    spec = None

    @property
    def index(self) -> int:
        return self._index

    @property
    def observation_space(self) -> spaces.Box:
        return self._venv.single_observation_space

    @property
    def action_space(self) -> spaces.Discrete:
        return self._venv.single_action_space

    @property
    def render_mode(self) -> str | None:
        return self._venv._render_mode

    @property
    def config(self) -> SpiderConfig:
        return self._venv.config

    @property
    def metadata(self) -> dict[str, Any]:
        return {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def action_masks(self) -> NDArray[np.bool_]:
        """This game's legal actions now, 1081 booleans (MaskablePPO's ``get_action_masks``)."""
        return self._venv._mask_row(self._index)

    def render(self) -> str | NDArray[np.uint8] | None:
        return self._venv.render_game(self._index)

    def hint(self) -> tuple[int, str]:
        """The server's recommended action for this game, and the reason."""
        return self._venv.hint(self._index)


class SpiderVecEnv(VecEnv):  # type: ignore[misc, unused-ignore]
    """``num_envs`` games of Spider Solitaire as a Stable-Baselines3 ``VecEnv``.

    Takes :class:`~spider_env.SpiderVectorEnv`'s arguments: the game as
    ``config`` (a :class:`~spider_env.SpiderConfig`) and/or its fields as
    keywords (``rules``, ``suits``, ``max_steps``, ``obs``, ...), and
    ``illegal``, ``illegal_penalty``, ``mask``, ``workers``, ``address``
    (a running server, or None to start one owned by this env),
    ``render_mode`` (None, ``"rgb_array"`` or ``"ansi"``), ``timeout``
    (seconds a reply may take, default 60; None waits for ever) and
    ``shm`` (shared memory with the server on a Unix socket: None uses it
    where offered, the default; the arrays returned are always new).

    The batch runs with the server's same-step autoreset, SB3's convention:
    for a game that ended, ``step_wait`` returns the new episode's first
    observation, and its info holds

    - ``terminal_observation``: the ended episode's last observation;
    - ``TimeLimit.truncated``: truncated (by ``max_steps``) and not
      terminated; SB3's on-policy algorithms bootstrap from the terminal
      observation's value there;
    - ``episode``: ``{"r", "l", "t"}`` as SB3's ``Monitor`` writes it (a
      ``VecMonitor`` around this env replaces it with the same figures), so
      ``rollout/ep_rew_mean`` is logged without a wrapper;
    - ``is_success``: whether the game was won (SB3 logs
      ``rollout/success_rate`` from it);
    - ``episode_key`` (default ``"spider_episode"``): ``{"r", "l", "won",
      "runs"}`` as the other spider envs give it;
    - ``score``, ``runs``, ``moves``, ``illegal`` of the last step.

    A game still playing has ``score``, ``runs``, ``moves``, ``num_legal``,
    ``illegal`` and ``TimeLimit.truncated`` (False). ``reset_infos[i]``
    holds the latest episode start's info of game i.

    Action masks: :meth:`action_masks` gives all games' (num_envs, 1081)
    booleans at once; ``env_method("action_masks")`` a list of one row per
    game, which is what sb3-contrib's ``get_action_masks`` stacks for
    MaskablePPO. The masks belong to the observations last returned.

    Seeds follow SB3: :meth:`seed` (``model.set_random_seed``, or the
    algorithm's ``seed=``) seeds the next :meth:`reset`, game i with
    ``seed + i``, which deals what ``SpiderEnv().reset(seed=seed + i)``
    deals; later episodes continue each game's stream. ``seed([s0, s1,
    ...])`` gives each game its own seed (e.g. a fixed evaluation set).
    An algorithm given ``seed=`` seeds the env itself when it is built,
    replacing seeds set before: seed after building it, or through it.
    """

    def __init__(
        self,
        num_envs: int = 1,
        config: SpiderConfig | Mapping[str, Any] | None = None,
        *,
        illegal: IllegalPolicy = "noop",
        illegal_penalty: float = 0.0,
        render_mode: RenderMode | None = None,
        address: Address | SpiderServer | None = None,
        mask: MaskForm = "bits",
        workers: int = 0,
        episode_key: str | None = "spider_episode",
        shm: bool | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        **game: Any,
    ):
        game_config = SpiderConfig.resolve(config, **game)
        n = int(num_envs)
        if n < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        if render_mode not in (None, "rgb_array", "ansi"):
            raise ValueError(f"render_mode {render_mode!r}: want 'rgb_array', 'ansi' or None")
        self._render_mode = render_mode
        self.episode_key = _episode_key(episode_key)
        self.server: SpiderServer | None = None
        """The server this env started, if it started one."""
        self._client: Client | None = None
        self._stash: StepReply | None = None  # a step reply received early (see _sync)
        self._stash_error: SpiderError | None = None  # or the error it was
        self._last: StepReply | None = None
        # A client of the given server, or of one started for it, as the
        # other envs have (the timeout checked before any start).
        backend = _Backend(address, timeout)
        self.server, self._client = backend.server, backend.client
        try:
            self.spider_spec = self._client.make(
                game_config,
                n=n,
                autoreset="same-step",
                illegal=illegal,
                illegal_penalty=illegal_penalty,
                mask=mask,
                workers=workers,
                shm=shm is not False and backend.unix,
            )
            if shm and not self._client.shared:
                why = self._client.shm_error or "the address is not a Unix socket"
                raise ValueError(f"shm=True: no shared memory with this server: {why}")
        except BaseException:
            self.close()
            raise
        self.config: SpiderConfig = self.spider_spec["config"]
        """The game the server made: its echo of every game option."""
        low, high = self.spider_spec["obs_low"], self.spider_spec["obs_high"]
        self.single_observation_space = spaces.Box(
            low=low, high=high, shape=self.spider_spec["obs_shape"], dtype=low.dtype
        )
        """One game's observation space (SB3's ``observation_space`` is the same: SB3 spaces are per game)."""
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self._games = [_Game(self, i) for i in range(n)]
        self._t0 = time.time()
        super().__init__(n, self.single_observation_space, self.single_action_space)
        # SB3's VecEnv lists the render modes only; VecVideoRecorder reads
        # the frame rate here, 30 fps without it.
        meta: dict[str, Any] = dict(getattr(self, "metadata", None) or {})
        meta["render_fps"] = SpiderEnv.metadata["render_fps"]
        self.metadata = meta

    # -- the connection ------------------------------------------------------

    @property
    def client(self) -> Client:
        """The protocol client of this env's one connection."""
        if self._client is None:
            raise SpiderError("closed", "the SpiderVecEnv is closed: make a new one")
        return self._client

    def _sync(self) -> None:
        """Read a step reply still in flight, keeping it for step_wait, so
        that another request can go out (render, hint). A step the server
        refused is kept too, for step_wait to raise: the render or hint
        goes ahead, and the step's error is told where the step is."""
        c = self.client
        if c.pending:
            with _whole(c, "step_wait"):
                try:
                    self._stash = self._owned(c.step_receive())
                except SpiderError as e:
                    self._stash_error = e

    def _owned(self, r: StepReply) -> StepReply:
        """The reply's arrays as this env's own: with shared memory they are
        views the next step overwrites, and SB3 keeps observations across
        steps (its rollout buffer stores the previous ones after the step)."""
        if not self.client.shared:
            return r
        by_key = cast(Mapping[str, NDArray[Any]], r)
        return cast(StepReply, {k: v.copy() for k, v in by_key.items()})

    def _discard_pending(self) -> None:
        """Finish the step in flight and drop its results, or its error (a
        reset replaces what it did: SB3's API calls it cancelled; the server
        has played it)."""
        self._stash, self._stash_error = None, None
        c = self._client
        if c is not None:
            c.discard()

    # -- the VecEnv API --------------------------------------------------------

    def reset(self) -> ObsArray:
        """Reset every game; return the observations (SB3's API: no infos,
        they go to :attr:`reset_infos`). The seeds set by :meth:`seed` are
        used once; without them every game goes on to its next episode
        (the first reset drawing its seeds on the server)."""
        options = [o for o in self._options if o]
        if options:
            raise ValueError(f"SpiderVecEnv.reset takes no options, got {options[0]!r}")
        seeds: list[int | None] = [None if s is None else _seed(s) for s in self._seeds]
        with _whole(self.client, "reset"):
            self._discard_pending()
            if all(s is None for s in seeds):
                r = self._owned(self.client.reset())
            else:
                if self._last is None:
                    # No episode to go on with yet: unseeded games get a seed
                    # from numpy's global generator, the one SB3's set_random_seed seeds.
                    seeds = [int(np.random.randint(0, 2**63, dtype=np.int64)) if s is None else s for s in seeds]  # noqa: NPY002
                r = self._owned(self.client.reset(seeds=seeds))
            self._last = r
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = self._start_infos(r, range(self.num_envs))
        return r["obs"]

    def seed(self, seed: int | Sequence[int | None] | None = None) -> Sequence[int | None]:
        """Seed the next :meth:`reset` (SB3's semantics): an int seeds game i
        with ``seed + i``; None draws the int from numpy's global generator.
        A sequence of ``num_envs`` seeds (an extension) seeds each game with
        its own, a None game going on to its next episode. Returns the seeds."""
        if seed is None or isinstance(seed, (int, np.integer)):
            if seed is not None and _seed(seed) + self.num_envs > 2**64:
                raise ValueError(f"seed {seed} + {self.num_envs - 1} for the last game is over 2**64-1")
            seeds: Sequence[int | None] = super().seed(None if seed is None else int(seed))
            return seeds
        given = [None if s is None else _seed(s) for s in seed]
        if len(given) != self.num_envs:
            raise ValueError(f"{len(given)} seeds for {self.num_envs} games")
        self._seeds = given
        return given

    def step(self, actions: NDArray[Any]) -> _StepReturn:
        """Step every game and return (obs, rewards, dones, infos): what
        :meth:`step_async` and :meth:`step_wait` return, as one request, so
        that a Ctrl-C between the two closes the env as anywhere else in a
        step, rather than leave the step in flight."""
        ids = self._step_ids(actions, "step")
        with _whole(self.client, "step"):
            self.client.step_send(ids)
            r = self._owned(self.client.step_receive())
            self._last = r
        return self._results(r)

    def step_async(self, actions: NDArray[Any]) -> None:
        """Send the step to the server and return without waiting."""
        ids = self._step_ids(actions, "step_async")
        with _whole(self.client, "step_async"):
            self.client.step_send(ids)

    def _step_ids(self, actions: NDArray[Any], what: str) -> NDArray[np.int64]:
        """The action ids of a step, once one may start (what names the call)."""
        if self._stash is not None or self._stash_error is not None or self.client.pending:
            raise RuntimeError(f"{what} while a step is in flight: call step_wait first")
        if self._last is None:
            raise gym.error.ResetNeeded(f"call reset before {what}")
        a = np.asarray(actions)
        if a.shape == (self.num_envs, 1):
            a = a[:, 0]  # a column of ids, as some SB3 wrappers give a Discrete space
        # The checks SpiderEnv and SpiderVectorEnv make: integer ids in 0..1080.
        return _action_ids(a, (self.num_envs,))

    def step_wait(self) -> _StepReturn:
        """Wait for the step sent by :meth:`step_async`; return (obs, rewards, dones, infos)."""
        if self._stash_error is not None:
            e, self._stash_error = self._stash_error, None
            raise e
        if self._stash is not None:
            r, self._stash = self._stash, None
            self._last = r
        elif self.client.pending:
            with _whole(self.client, "step_wait"):
                r = self._owned(self.client.step_receive())
                self._last = r
        else:
            raise RuntimeError("step_wait without step_async")
        return self._results(r)

    def _results(self, r: StepReply) -> _StepReturn:
        """A step reply as SB3's (obs, rewards, dones, infos)."""
        terminated, truncated = r["terminated"], r["truncated"]
        dones = terminated | truncated
        score, runs, moves = r["score"].tolist(), r["runs"].tolist(), r["moves"].tolist()
        num_legal, illegal = r["num_legal"].tolist(), r["illegal"].tolist()
        infos: list[dict[str, Any]] = [
            {
                "score": score[i],
                "runs": runs[i],
                "moves": moves[i],
                "num_legal": num_legal[i],
                "illegal": illegal[i],
                "TimeLimit.truncated": False,
            }
            for i in range(self.num_envs)
        ]
        if dones.any():
            ended = np.flatnonzero(dones).tolist()
            final_obs = r["final_obs"]
            now = round(time.time() - self._t0, 6)
            for i in ended:
                term, trunc = bool(terminated[i]), bool(truncated[i])
                ret, length = float(r["episode_return"][i]), int(r["episode_length"][i])
                won, ep_runs = bool(r["episode_won"][i]), int(r["episode_runs"][i])
                info = {
                    "score": int(r["final_score"][i]),
                    "runs": ep_runs,
                    "moves": length,
                    "illegal": illegal[i],
                    "TimeLimit.truncated": trunc and not term,
                    "terminal_observation": final_obs[i],
                    "episode": {"r": ret, "l": length, "t": now},
                    "is_success": won,
                }
                if self.episode_key is not None:
                    info[self.episode_key] = {"r": ret, "l": length, "won": won, "runs": ep_runs}
                infos[i] = info
            for i, info in zip(ended, self._start_infos(r, ended), strict=True):
                self.reset_infos[i] = info
        return r["obs"], r["rewards"], dones, infos

    @staticmethod
    def _start_infos(r: StepReply, games: Iterable[int]) -> list[dict[str, Any]]:
        return [
            {
                "score": int(r["score"][i]),
                "runs": int(r["runs"][i]),
                "moves": int(r["moves"][i]),
                "num_legal": int(r["num_legal"][i]),
            }
            for i in games
        ]

    def action_masks(self) -> NDArray[np.bool_]:
        """Every game's legal actions for the observations last returned:
        (num_envs, 1081) booleans. Answered from the last reply (no request),
        so it may be called while a step is in flight."""
        if self._last is None:
            raise gym.error.ResetNeeded("call reset before action_masks")
        masks: NDArray[np.bool_] = self._last["masks"].view(np.bool_).copy()  # the env's own stay unchanged
        return masks

    def _mask_row(self, index: int) -> NDArray[np.bool_]:
        """Game index's legal actions, a new array (what each game's
        ``action_masks`` gives MaskablePPO through ``env_method``)."""
        if self._last is None:
            raise gym.error.ResetNeeded("call reset before action_masks")
        row: NDArray[np.bool_] = self._last["masks"][index].view(np.bool_).copy()
        return row

    def hint(self, index: int = 0) -> tuple[int, str]:
        """The server's recommended action for game ``index`` and the reason."""
        if self._last is None:
            raise gym.error.ResetNeeded("call reset before hint")
        self._sync()
        h = self.client.hint(int(index))
        return h["action"], h["reason"]

    def render_game(self, index: int) -> str | NDArray[np.uint8] | None:
        """Game ``index`` as ``render_mode`` draws it: a (480, 640, 3)
        uint8 picture, the text board, or None without a render mode."""
        if self._last is None:
            raise gym.error.ResetNeeded("call reset before render")
        self._sync()
        if self._render_mode == "rgb_array":
            return self.client.render_rgb(int(index))
        if self._render_mode == "ansi":
            return self.client.render(int(index))
        return None

    def get_images(self) -> Sequence[NDArray[np.uint8] | None]:
        """Every game's (480, 640, 3) picture (render_mode "rgb_array"); SB3's
        ``render()`` tiles them."""
        if self._render_mode != "rgb_array":
            warnings.warn(f"The render mode is {self._render_mode}, but get_images needs 'rgb_array'.", stacklevel=2)
            return [None] * self.num_envs
        images: list[NDArray[np.uint8] | None] = []
        for i in range(self.num_envs):
            img = self.render_game(i)
            images.append(img if isinstance(img, np.ndarray) else None)
        return images

    def _targets(self, indices: VecEnvIndices) -> list[_Game]:
        if indices is None:
            return list(self._games)
        if isinstance(indices, (int, np.integer)):
            return [self._games[int(indices)]]
        return [self._games[int(i)] for i in indices]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """An attribute of each game (:class:`_Game`: ``observation_space``,
        ``action_space``, ``render_mode``, ``config``, ``metadata``,
        ``index``, the methods, and what ``set_attr`` set). A name no game
        has raises AttributeError (so ``has_attr`` is False)."""
        return [getattr(g, attr_name) for g in self._targets(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute on each game's object; the read-only ones (the
        spaces, ``config``, ...) raise AttributeError. Nothing reaches the
        server: the game options are fixed when the env is made."""
        for g in self._targets(indices):
            setattr(g, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """Call a method of each game's object: ``action_masks`` (one (1081,)
        bool row per game), ``render``, ``hint``."""
        return [getattr(g, method_name)(*method_args, **method_kwargs) for g in self._targets(indices)]

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper[Any, Any, Any, Any]], indices: VecEnvIndices = None
    ) -> list[bool]:
        """False for every game: no gymnasium wrapper sits inside this env."""
        return [False] * len(self._targets(indices))

    def __getstate__(self) -> dict[str, Any]:
        raise _uncopyable("SpiderVecEnv", "use DummyVecEnv over single SpiderEnv games")

    def close(self) -> None:
        """Close the connection and stop the server this env started. Idempotent."""
        client, self._client = getattr(self, "_client", None), None
        self._stash, self._stash_error = None, None
        if client is not None:
            client.close()
        server, self.server = getattr(self, "server", None), None
        if server is not None:
            server.close()
