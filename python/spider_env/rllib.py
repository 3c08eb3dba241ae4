"""RLlib support: an env creator for ``register_env``.

    import spider_env.rllib
    spider_env.rllib.register()          # register_env("Spider-v0", env_creator)
    config = (
        PPOConfig()
        .environment("Spider-v0", env_config={"suits": 1, "max_steps": 500})
        .rl_module(rl_module_spec=RLModuleSpec(module_class=ActionMaskingTorchRLModule))
    )

(the Dict observations below need RLlib's action-masking module; the whole
script is examples/rllib_ppo.py), or register the creator yourself with
``ray.tune.registry.register_env("Spider-v0", spider_env.rllib.env_creator)``.
The creator is a module-level function: Ray pickles it by reference, and an
env runner that never imported spider_env imports this module (and the
package) when it builds its envs, so spider-env must be installed on every
node (docs/scaling.md: the wheel, with the server binary inside, through
``runtime_env``). Only :func:`register` imports ray.

Each env is a :class:`~spider_env.SpiderEnv` wrapped in
:class:`~spider_env.wrappers.MaskInObservation`: Dict observations
``{"observations", "action_mask"}`` for RLlib's action-masking RLModule.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from ._client import _seed
from ._server import SpiderServer
from .config import SpiderConfig
from .envs import SpiderEnv, SpiderVectorEnv
from .wrappers import MaskInObservation, VectorMaskInObservation

__all__ = ["ENV_KEYS", "ENV_NAME", "env_creator", "log_episode_metrics", "register"]

ENV_NAME = "Spider-v0"

ENV_KEYS = (
    "config",
    "illegal",
    "illegal_penalty",
    "mask",
    "address",
    "episode_key",
    "render_mode",
    "timeout",
    "workers",
    "float32",
    "num_envs",
)
"""The env_config keys besides the game options (:class:`~spider_env.SpiderConfig`'s fields)."""

_GAME_KEYS = tuple(f.name for f in dataclasses.fields(SpiderConfig))

_lock = threading.Lock()
_shared: tuple[int, SpiderServer] | None = None  # (pid, server): this process's server
_users = 0  # the open envs using it


def _acquire_server() -> SpiderServer:
    """This process's own server, started on first use and shared by the
    envs it creates (an env runner with several envs runs one server)."""
    global _shared, _users
    with _lock:
        pid = os.getpid()
        if _shared is None or _shared[0] != pid or not _shared[1].running:
            if _shared is not None and _shared[0] == pid:
                _shared[1].close()  # it died (killed): its socket and files go
            _shared, _users = (pid, SpiderServer()), 0  # a forked child starts its own
        _users += 1
        return _shared[1]


def _release_server(server: SpiderServer) -> None:
    """An env using the shared server closed: the last one stops it (and
    its temporary directory goes, which a killed process would leave)."""
    global _shared, _users
    with _lock:
        if _shared is None or _shared[1] is not server:
            return
        _users -= 1
        if _users <= 0:
            _shared, _users = None, 0
            server.close()


# A seed's streams are spread over this many runners (sync mode) before
# two could share one.
_RUNNERS = 1 << 16


def _spread(seed: int | np.integer[Any], k: int, i: int) -> int:
    """Seed i of k drawn from ``seed``, seed * k + i: distinct for every
    (seed, i), i < k. A seed that is not one the envs take, or whose
    spread could pass 2**64-1 (the largest seed they take) for some i < k,
    raises ValueError: it wrapped at 2**63, where other seeds' games were
    dealt again."""
    s = _seed(seed)
    if s * k + k - 1 >= 1 << 64:
        raise ValueError(
            f"seed {s}: the RLlib envs deal seed * {k} + i (i < {k}), which must stay within 2**64-1: "
            f"use a seed of at most {((1 << 64) - k) // k}"
        )
    return s * k + i


class _SharedServerEnv(MaskInObservation):
    """MaskInObservation that gives the shared server back on close, takes
    it again on a reset after close, and pickles without it."""

    def __init__(self, env: SpiderEnv, server: SpiderServer | None, *, float32: bool, worker: int | None = None):
        super().__init__(env, float32=float32)
        self._shared_server = server
        self._sharing = server is not None
        self._spider = env
        self._worker = worker

    def __getstate__(self) -> dict[str, Any]:
        # A copy plays on its own server, as a copy of a SpiderEnv given a
        # SpiderServer does: the process's shared one is not the copy's.
        state = dict(self.__dict__)
        state["_shared_server"], state["_sharing"] = None, False
        return state

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if self._sharing and (self._shared_server is None or not self._shared_server.running):
            # Closed, and the last close stopped the shared server, or the
            # server died (killed): take this process's server again (a new
            # one if it died), and open anew on it, as a SpiderEnv whose own
            # server died does.
            if self._shared_server is not None:
                _release_server(self._shared_server)
                self._spider.close()  # its connection is to the dead server
            server = self._shared_server = _acquire_server()
            self._spider._address = server.address
        if seed is not None and self._worker is not None:
            # RLlib seeds runner w's SyncVectorEnv with seed + w, which
            # seeds its env i with seed + w + i: runners would share deal
            # streams. The runner's index spreads them apart.
            seed = _spread(seed, _RUNNERS, self._worker % _RUNNERS)
        return super().reset(seed=seed, options=options)

    def close(self) -> None:
        try:
            super().close()
        finally:
            server, self._shared_server = self._shared_server, None
            if server is not None:
                _release_server(server)


class _SharedServerVectorEnv(VectorMaskInObservation):
    """VectorMaskInObservation that gives the shared server back on close,
    and seeds its games apart from other runners'."""

    def __init__(self, env: SpiderVectorEnv, server: SpiderServer | None, *, float32: bool):
        super().__init__(env, float32=float32)
        self._shared_server = server

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        if isinstance(seed, (int, np.integer)):
            # RLlib seeds runner w's batch with seed + w; game i of it would
            # get seed + w + i, the deal stream of runner w + 1's game i - 1.
            # Game i gets seed * num_envs + i instead: every runner's games
            # apart.
            seed = [_spread(seed, self.num_envs, i) for i in range(self.num_envs)]
        return super().reset(seed=seed, options=options)

    def close(self, **kwargs: Any) -> None:
        try:
            super().close(**kwargs)
        finally:
            server, self._shared_server = self._shared_server, None
            if server is not None:
                _release_server(server)


def env_creator(env_config: Mapping[str, Any]) -> gym.Env[Any, Any] | gym.vector.VectorEnv[Any, Any, Any]:
    """Build an env from RLlib's ``env_config`` (a dict or an ``EnvContext``).

    Keys: the game options (``rules``, ``suits``, ``max_steps``, ``obs``,
    ``shaping``, ...; the server's defaults where absent, except ``obs``,
    which defaults to ``"float32"``, the encoding made for networks), or
    ``config``, the game as one :class:`~spider_env.SpiderConfig` (or a
    dict of its fields, as a config file or a Tune search space gives it),
    the game options given beside it laid over it; the env options
    ``illegal`` (default ``"noop"``), ``illegal_penalty``,
    ``mask``, ``episode_key``, ``render_mode``, ``timeout`` (seconds a
    reply may take, default 60: raise it for a server shared by many
    runners), ``workers`` (the server's goroutines for a vector env's
    batch; only with ``num_envs``), and

    - ``address``: a running ``spider serve`` to connect to (e.g. one on the
      runner's own node, ``"127.0.0.1:7878"``); without it the process
      starts its own server on a Unix socket, one per process, shared by
      its envs and stopped when the last of them is closed (or the
      process exits);
    - ``float32`` (default True): cast observations to float32 (it matters
      only for ``obs="compact"``, uint8 otherwise);
    - ``num_envs``: set by RLlib's ``gym_env_vectorize_mode=
      "vector_entry_point"``; then the whole runner's envs are one
      :class:`~spider_env.SpiderVectorEnv` batch (next-step autoreset),
      wrapped in :class:`~spider_env.wrappers.VectorMaskInObservation`.

    Seeds (``.debugging(seed=S)``): RLlib resets runner w's envs with the
    seed S + w, and a vector env seeds its game i with that seed + i, so
    runners would play each other's deal streams (R runners of E games,
    R + E - 1 streams). The envs made here spread them: a batch's game i
    gets seed * num_envs + i, and a single env (sync mode) whose
    ``env_config`` names its ``worker_index`` gets seed * 65536 +
    worker_index. Every game of every runner then has its own stream. A
    seed whose spread would pass 2**64-1, the largest seed a game takes
    (2**64 / num_envs, or 2**48 for a single env), raises ValueError.

    An unknown key raises TypeError.
    """
    cfg = dict(env_config)
    unknown = sorted(k for k in cfg if k not in _GAME_KEYS and k not in ENV_KEYS)
    if unknown:
        raise TypeError(
            f"unknown env_config key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"known: the game options {', '.join(_GAME_KEYS)} and {', '.join(ENV_KEYS)}"
        )
    float32 = bool(cfg.pop("float32", True))
    num_envs = cfg.pop("num_envs", None)
    game = cfg.get("config")
    if isinstance(game, Mapping):
        game = cfg["config"] = SpiderConfig.resolve(None, **game)
    elif game is not None and not isinstance(game, SpiderConfig):
        raise TypeError(
            f'env_config "config" must be a SpiderConfig or a dict of its fields, got {type(game).__name__}'
        )
    if game is None or game.obs is None:
        cfg.setdefault("obs", "float32")
    cfg.setdefault("illegal", "noop")
    if cfg.get("workers", 0) is None:
        del cfg["workers"]  # the default, as absent
    if num_envs is None and "workers" in cfg:
        raise TypeError('env_config "workers" sets a batch\'s: it needs gym_env_vectorize_mode="vector_entry_point"')
    server = None
    if cfg.get("address") is None:
        server = cfg["address"] = _acquire_server()
    try:
        if num_envs is not None:
            venv = SpiderVectorEnv(int(num_envs), autoreset_mode="next-step", **cfg)
            return _SharedServerVectorEnv(venv, server, float32=float32)
        worker = getattr(env_config, "worker_index", None)  # an EnvContext's
        return _SharedServerEnv(
            SpiderEnv(**cfg), server, float32=float32, worker=None if worker is None else int(worker)
        )
    except BaseException:
        if server is not None:
            _release_server(server)
        raise


def log_episode_metrics(
    *,
    episode: Any,
    env_runner: Any = None,
    metrics_logger: Any = None,
    prev_episode_chunks: Sequence[Any] | None = None,
    **kwargs: Any,
) -> None:
    """An RLlib ``on_episode_end`` callback logging the game's own figures
    (``config.callbacks(on_episode_end=spider_env.rllib.log_episode_metrics)``).

    Under the ``env_runners`` results, key ``spider``: ``won`` (the win
    rate), ``runs`` (completed runs) and ``score`` (final score), each a
    mean over the last 100 episodes; ``illegal`` (illegal actions played
    since the start: 0 under correct masking) and ``episodes_by_runner``
    (episodes each env runner finished since the start, by its worker
    index). The counts are RLlib ``lifetime_sum`` metrics. ``won`` and
    ``runs`` come from the episode statistics, whatever ``episode_key``
    names them (none with ``episode_key=None``).
    """
    if metrics_logger is None:
        return
    # Each chunk after the first starts with the last info of the one
    # before (RLlib's cut keeps the observation a chunk starts from): that
    # step is counted once.
    chunks = [*(prev_episode_chunks or ()), episode]
    infos = [i for k, chunk in enumerate(chunks) for i in list(chunk.get_infos())[1 if k else 0 :]]
    last = infos[-1] if infos and isinstance(infos[-1], dict) else {}
    # The episode statistics under whatever env_config's episode_key named
    # them: the one dict of the info with won and runs.
    stats = next((v for v in last.values() if isinstance(v, dict) and "won" in v and "runs" in v), None)
    if stats is not None:
        metrics_logger.log_value(("spider", "won"), float(stats["won"]), reduce="mean", window=100)
        metrics_logger.log_value(("spider", "runs"), float(stats["runs"]), reduce="mean", window=100)
    if "score" in last:
        metrics_logger.log_value(("spider", "score"), float(last["score"]), reduce="mean", window=100)
    illegal = sum(1 for i in infos if isinstance(i, dict) and i.get("illegal"))
    metrics_logger.log_value(("spider", "illegal"), illegal, reduce="lifetime_sum")
    if env_runner is not None:
        index = str(getattr(env_runner, "worker_index", 0))
        metrics_logger.log_value(("spider", "episodes_by_runner", index), 1, reduce="lifetime_sum")


def register(name: str = ENV_NAME) -> str:
    """``ray.tune.registry.register_env(name, env_creator)``; returns name,
    for ``config.environment(name, env_config={...})``."""
    try:
        from ray.tune.registry import register_env  # type: ignore[import-not-found, unused-ignore]
    except ImportError as e:
        raise ImportError(
            "spider_env.rllib.register needs ray[rllib], which spider-env does not require: "
            "pip install './python[rllib]' from the spider repository (or pip install 'ray[rllib]' torch)"
        ) from e
    register_env(name, env_creator)
    return name
