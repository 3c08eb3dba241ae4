"""Gymnasium environments backed by the spider server.

:class:`SpiderEnv` is one game (a server batch of one) behind
``gymnasium.Env``; :class:`SpiderVectorEnv` is a whole server batch behind
``gymnasium.vector.VectorEnv``, stepped in one request. Both start a private
server when no ``address`` is given and stop it on ``close()`` (or when
garbage collected, or at exit).

The game is a :class:`SpiderConfig`, given as ``config`` (or a dict of
its fields, as a gymnasium spec read back from JSON holds it) or as its
fields' keyword arguments (or both: the keywords replace those fields of
``config``), and sent as it is: the server's defaults fill in what is not
given. The other arguments (``illegal``, ``mask``, ``address``, ...) belong
to the environment, not to the game.
"""

from __future__ import annotations

import array
import contextlib
import dataclasses
import multiprocessing
import socket
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias, cast

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space
from numpy.typing import NDArray

from ._client import (
    NUM_ACTIONS,
    Address,
    Client,
    MakeReply,
    ObsArray,
    Seed,
    Seeds,
    SpiderError,
    SpiderValueError,
    StepReply,
    _seed,
    _whole,
    check_seconds,
    parse_address,
)
from ._server import SpiderServer
from .config import SpiderConfig

__all__ = ["NUM_ACTIONS", "SpiderEnv", "SpiderVectorEnv"]

_AUTORESET_NAMES = {
    AutoresetMode.NEXT_STEP: "next-step",
    AutoresetMode.SAME_STEP: "same-step",
    AutoresetMode.DISABLED: "disabled",
}


def _autoreset_mode(mode: AutoresetMode | str) -> AutoresetMode:
    if isinstance(mode, AutoresetMode):
        return mode
    if isinstance(mode, str):
        key = mode.lower().replace("_", "-")
        for m, name in _AUTORESET_NAMES.items():
            if key in (name, m.value.lower(), name.replace("-", "")):
                return m
    raise ValueError(f"autoreset_mode {mode!r}: want next-step, same-step, disabled or a gymnasium AutoresetMode")


# How long an env waits for one reply before it gives up on the server.
DEFAULT_TIMEOUT: Final = 60.0


class _Backend:
    """A client connected to a given server or to one started for it."""

    client: Client

    def __init__(self, address: Address | SpiderServer | None, timeout: float | None):
        check_seconds("timeout", timeout)  # before a server is started for it
        self.server: SpiderServer | None = None
        if address is None:
            self.server = SpiderServer()
            address = self.server.address
        elif isinstance(address, SpiderServer):
            address = address.address
        self.unix = parse_address(address)[0] == socket.AF_UNIX
        try:
            self.client = Client(address, timeout=timeout)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self.server is not None:
            self.server.close()


# The step reply's keys that are infos as they are.
_INFO_KEYS: Final = ("score", "runs", "moves", "num_legal", "illegal")


def _legal_lists(masks: NDArray[np.uint8]) -> NDArray[np.int16]:
    """Each mask row's legal ids in increasing order, at the start of its
    row of an (n, 1081) int16 array, as the server lists them (the rest of
    a row is 0 here, stale there)."""
    n, width = masks.shape
    flat = np.flatnonzero(masks.view(np.bool_))  # row-major: each row's ids contiguous, increasing
    counts = masks.sum(axis=1, dtype=np.int64)
    rows = np.repeat(np.arange(n), counts)
    starts = np.cumsum(counts) - counts
    out = np.zeros((n, width), np.int16)
    out.ravel()[rows * width + np.arange(flat.size) - starts[rows]] = flat - rows * width
    return out


def _uncopyable(cls: str, instead: str) -> TypeError:
    """The error a batch env's pickling or copying raises."""
    return TypeError(
        f"a {cls} cannot be pickled or copied: its games live in a server batch, and replaying "
        "every game's history into a new batch is not supported; make a new env with the same arguments "
        f"({cls}(num_envs, env.config, ...)) instead, or {instead}"
    )


IllegalPolicy: TypeAlias = Literal["error", "noop", "lose"]
"""What an action that is not a legal move does (``illegal``): PROTOCOL.md's make."""

MaskForm: TypeAlias = Literal["bytes", "bits"]
"""The masks' form on the wire (``mask``); Python always sees them unpacked."""

RenderMode: TypeAlias = Literal["ansi", "rgb_array"]
"""``render_mode``: the board as text, or as a (480, 640, 3) uint8 picture."""


def _check_mask(mask: str) -> None:
    if mask not in ("bytes", "bits"):
        raise ValueError(f"mask {mask!r}: want 'bytes' or 'bits'")


def _action_ids(actions: Any, shape: tuple[int, ...]) -> NDArray[np.int64]:
    """actions as action ids of the given shape, or TypeError/ValueError.

    Only integers are ids (Python ints, numpy integers, integer arrays):
    floats, strings and booleans are refused rather than truncated or
    taken as 0/1, and an id outside the action space 0 to 1080 is refused
    whatever its size (Gymnasium's ``action_space.contains``). An id inside
    the space that is not a legal move is the game's business: the env's
    ``illegal`` policy.
    """
    a = np.asarray(actions)
    if a.size == 0 and a.dtype.kind == "f":
        a = a.astype(np.int64)  # [] is no actions, which numpy makes float64
    if a.dtype == object and all(isinstance(x, int) and not isinstance(x, bool) for x in a.reshape(-1)):
        # Python ints too large for int64 are ids outside the space too.
        for x in a.reshape(-1):
            if not 0 <= x < NUM_ACTIONS:
                raise ValueError(f"action {x} is outside the action space 0 to {NUM_ACTIONS - 1}")
        a = a.astype(np.int64)
    if a.dtype.kind not in "iu" or isinstance(actions, (bool, np.bool_)):
        what = "booleans" if a.dtype.kind == "b" else f"dtype {a.dtype}"
        raise TypeError(f"actions must be integer action ids, got {what} ({actions!r:.60})")
    if a.shape != shape:
        raise ValueError(f"actions of shape {a.shape}; want {shape}, one id per game")
    if a.size:
        bad = (a < 0) | (a >= NUM_ACTIONS)
        if bad.any():
            i = int(np.flatnonzero(bad.reshape(-1))[0])
            raise ValueError(f"action {a.reshape(-1)[i]} is outside the action space 0 to {NUM_ACTIONS - 1}")
    return a.astype(np.int64).reshape(-1)


def _observation_space(spec: MakeReply) -> spaces.Box:
    low, high = spec["obs_low"], spec["obs_high"]
    return spaces.Box(low=low, high=high, shape=spec["obs_shape"], dtype=low.dtype)


def _episode_key(key: Any) -> str | None:
    """``episode_key`` checked where it is given: a wrong type failed at the
    first episode's end, after the server had played that step."""
    if key is not None and not isinstance(key, str):
        raise TypeError(f"episode_key must be a str or None, got {key!r}")
    return key


@contextlib.contextmanager
def _generator_kept(env: gym.Env[Any, Any] | gym.vector.VectorEnv[Any, Any, Any]) -> Iterator[None]:
    """Put ``np_random`` back as it was if the block raises: a reset that
    fails (a timeout, a broken server, Ctrl-C) has then drawn nothing, so
    the reset that retries it deals what it would have dealt, as if the
    failure had not happened."""
    rng = env.np_random  # made now if the env has none, so that a retry draws what this reset would have
    seed, state = env._np_random_seed, rng.bit_generator.state
    try:
        yield
    except BaseException:
        env._np_random, env._np_random_seed = rng, seed
        rng.bit_generator.state = state
        raise


def _episode_over(e: SpiderError) -> bool:
    """Whether the server refused a request for a game that has ended: the
    code episode_over, or from a server before that code (a stale binary),
    bad_action for a step and bad_order for a hint, in its words."""
    return e.code == "episode_over" or (e.code in ("bad_action", "bad_order") and "has ended" in e.message)


class SpiderEnv(gym.Env[NDArray[Any], np.int64]):
    """One game of Spider Solitaire.

    The game is ``config`` (a :class:`SpiderConfig`) with the keyword
    arguments ``game`` laid over it: ``SpiderEnv(rules="cardems", suits=2)``
    and ``SpiderEnv(SpiderConfig(rules="cardems", suits=2))`` are the same
    game. An unknown keyword raises TypeError; a field not given is the
    server's default. :attr:`config` is the configuration the server made.

    Actions are the 1081 ids of the fixed action space; ``info["action_mask"]``
    (int8, 1 where legal) and :meth:`action_masks` (bool) say which are legal.
    The reward is the change of the score (which starts at 500); the episode
    terminates when the game is won or lost and is truncated after
    ``max_steps`` actions. ``illegal`` is what an illegal action does:
    ``"noop"`` (the default: nothing changes, ``info["illegal"]`` is set and
    the reward is ``-illegal_penalty``), ``"lose"`` (the game ends as
    terminated) or ``"error"`` (:class:`SpiderError` is raised; Gymnasium's
    ``check_env`` steps with ``action_space.sample()``, so it passes only
    with ``"noop"`` or ``"lose"``).

    ``address`` is a running server's address (``"host:port"``,
    ``"unix:/path"``) or a :class:`SpiderServer`; without one the env starts
    its own server and stops it on :meth:`close`. ``mask`` is the masks'
    form on the wire (``"bytes"`` or ``"bits"``; Python always sees them
    unpacked). ``timeout`` is how many seconds a request may wait for its
    whole reply (default 60; None waits for ever): a server that stops
    answering, or sends a byte now and then, raises :class:`SpiderError`
    with code ``"timeout"`` instead of hanging.

    An action is an integer id (a Python or numpy integer); floats, strings
    and booleans raise TypeError, and an id outside the action space 0 to
    1080 raises ValueError. An id inside the space that is not a legal move
    follows ``illegal``.

    When an episode ends, its info holds the episode's statistics under
    ``episode_key`` (default ``"spider_episode"``: ``r`` return, ``l``
    length, ``won``, ``runs``); ``"episode"`` is left to wrappers such as
    Gymnasium's ``RecordEpisodeStatistics``, which refuse to overwrite it.
    None leaves the statistics out. From then until the next reset the
    ``action_mask`` is all ones (a masked sampler never meets an empty
    mask, Pgx's convention) while ``num_legal`` stays the true count, 0;
    a step then raises gymnasium's ``ResetNeeded``, as before the first
    reset.

    ``render_mode`` ``"ansi"`` renders the board as text, ``"rgb_array"``
    as a (480, 640, 3) uint8 picture drawn by the server.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}  # noqa: RUF012 (gymnasium's convention)
    # Their own types, not gymnasium's Space: a type checker then knows
    # action_space.n and observation_space.high.
    observation_space: spaces.Box
    action_space: spaces.Discrete

    def __init__(
        self,
        config: SpiderConfig | Mapping[str, Any] | None = None,
        *,
        illegal: IllegalPolicy = "noop",
        illegal_penalty: float = 0.0,
        render_mode: RenderMode | None = None,
        address: Address | SpiderServer | None = None,
        mask: MaskForm = "bytes",
        episode_key: str | None = "spider_episode",
        timeout: float | None = DEFAULT_TIMEOUT,
        **game: Any,
    ):
        game_config = SpiderConfig.resolve(config, **game)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}: want one of {self.metadata['render_modes']} or None")
        _check_mask(mask)
        self.render_mode = render_mode
        self.episode_key = _episode_key(episode_key)
        # A given server is reached again by its address, not kept alive.
        self._address = address.address if isinstance(address, SpiderServer) else address
        self._open_args: dict[str, Any] = {
            "config": game_config,
            "illegal": illegal,
            "illegal_penalty": illegal_penalty,
            "mask": mask,
            "timeout": timeout,
        }
        self._open()
        self.config: SpiderConfig = self.spider_spec["config"]
        """The game the server made: its echo of every game option."""
        self.observation_space = _observation_space(self.spider_spec)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self._last: StepReply | None = None
        self._ended = False
        self._args: dict[str, Any] = {
            "config": game_config,
            "illegal": illegal,
            "illegal_penalty": illegal_penalty,
            "render_mode": render_mode,
            "address": None if address is None or isinstance(address, SpiderServer) else address,
            "mask": mask,
            "episode_key": episode_key,
            "timeout": timeout,
        }
        # How to replay to here (see __getstate__): the seed of the stream,
        # the episodes gone on to since, and this episode's actions, two
        # bytes each (ids are below 1081): a list took 40 bytes a step,
        # which an episode without a step limit grows for ever.
        self._stream: int | None = None
        self._episodes = 0
        self._actions = array.array("H")

    def _open(self) -> None:
        """Connect (starting a server unless given an address) and make the game."""
        a = self._open_args
        backend = _Backend(self._address, a["timeout"])
        try:
            spec: MakeReply = backend.client.make(
                a["config"],
                n=1,
                autoreset="disabled",
                illegal=a["illegal"],
                illegal_penalty=a["illegal_penalty"],
                mask=a["mask"],
                workers=1,
            )
        except BaseException:
            backend.close()
            raise
        old: MakeReply | None = getattr(self, "spider_spec", None)
        if old is not None and (spec["config"] != old["config"] or spec["obs_shape"] != old["obs_shape"]):
            # The address now serves another version or other defaults.
            backend.close()
            where = "the new server" if self._address is None else f"the server at {self._address!r}"
            raise SpiderValueError(
                "bad_config",
                f"{where} makes {spec['config']} with observations {spec['obs_shape']}, "
                f"not this env's {old['config']} {old['obs_shape']}: make a new env",
            )
        self._backend, self.spider_spec = backend, spec
        self._closed = False

    @property
    def client(self) -> Client:
        """The protocol client of this env's connection."""
        return self._backend.client

    @property
    def server(self) -> SpiderServer | None:
        """The server this env started, if it started one."""
        return self._backend.server

    def __getstate__(self) -> dict[str, Any]:
        """What pickle and copy.deepcopy take: the constructor's arguments,
        the random generator, and how to replay the game to where it is
        (its seed, episodes and moves). The copy starts its own server (or
        connects anew to the same address) and replays to the same
        position, so it plays on exactly as this env would."""
        return {
            "args": self._args,
            "np_random": self._np_random,
            "np_random_seed": self._np_random_seed,
            "stream": self._stream,
            "episodes": self._episodes,
            "actions": list(self._actions),
            "reset": self._last is not None,
            "spec": self._copied_spec(),
        }

    def _copied_spec(self) -> EnvSpec | None:
        """gymnasium.make's spec as the copy keeps it: a SpiderServer given
        as the address is not carried (the copy starts its own, as its
        arguments say), so the spec names none either."""
        spec = self.spec
        if spec is not None and isinstance(spec.kwargs.get("address"), SpiderServer):
            spec = dataclasses.replace(spec, kwargs={**spec.kwargs, "address": None})
        return spec

    def __setstate__(self, state: dict[str, Any]) -> None:
        args = dict(state["args"])
        config = args.pop("config")
        self.__init__(config, **args)  # type: ignore[misc]
        if state["reset"]:
            # Deal the same game: its stream's seed, then as many next
            # episodes as the original went through, then its moves.
            self.reset(seed=state["stream"])
            for _ in range(state["episodes"]):
                self.reset()
            for a in state["actions"]:
                self.step(a)
        self._np_random = state["np_random"]
        self._np_random_seed = state["np_random_seed"]
        self.spec = state.get("spec")

    def reset(
        self, *, seed: Seed | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsArray, dict[str, Any]]:
        """Deal a new game.

        With ``seed`` (an integer from 0 to 2**64-1, the protocol's seeds;
        gymnasium's own seeding takes larger ones) the game is the first of
        that seed's stream (the same as game 0 of a vector env reset with
        that seed); without one, the
        next game of the stream, the first reset drawing a seed from
        ``self.np_random``. A reset that fails (a timeout, Ctrl-C) leaves
        ``np_random`` as it was, so the reset that retries it deals the
        same game.
        """
        if options:
            raise ValueError(f"SpiderEnv.reset takes no options, got {sorted(options)}")
        if seed is not None:
            seed = _seed(seed)  # refused before anything changes, np_random included
        if not self._closed and self.client.closed:
            # A fault closed the connection (a broken or killed server, an
            # interrupt): a reset is the way on, as after close().
            self.close()
        if self._closed:
            # Reset after close() opens anew, as Gymnasium's own envs go on
            # after close (SB3's check_env resets after closing). The new
            # server has no stream: it is dealt this env's to where it was.
            self._open()
            if seed is None and self._stream is not None:
                with _whole(self.client, "reset"):
                    self.client.reset(seed=self._stream)
                    for _ in range(self._episodes):
                        self.client.reset()
        never_seeded = self._np_random is None
        with _generator_kept(self):
            super().reset(seed=seed)
            if seed is None and (never_seeded or self._last is None):
                seed = int(self.np_random.integers(0, 2**63))
            with _whole(self.client, "reset"):
                r = self.client.reset(seed=seed)
                if seed is None:
                    self._episodes += 1
                else:
                    self._stream, self._episodes = int(seed), 0
                del self._actions[:]
                self._last, self._ended = r, False
        return r["obs"][0], self._info(r, ended=False)

    def step(
        self, action: int | np.integer[Any] | NDArray[np.integer[Any]]
    ) -> tuple[ObsArray, float, bool, bool, dict[str, Any]]:
        if self._last is None:
            raise gym.error.ResetNeeded("call reset before step")
        if self._ended:
            # As before the first reset (the server would refuse the step
            # as episode_over).
            raise gym.error.ResetNeeded("the episode has ended: call reset before step")
        ids = _action_ids(action, ())
        with _whole(self.client, "step"):
            r = self.client.step(ids)
            self._actions.append(int(ids[0]))
            self._last = r
            terminated, truncated = bool(r["terminated"][0]), bool(r["truncated"][0])
            self._ended = terminated or truncated
        info = self._info(r, ended=self._ended)
        return r["obs"][0], float(r["rewards"][0]), terminated, truncated, info

    def _info(self, r: StepReply, ended: bool) -> dict[str, Any]:
        info: dict[str, Any] = {
            # A copy (1081 bytes): writing into it must not change what
            # action_masks() says, as with a SyncVectorEnv's infos.
            "action_mask": np.ones(NUM_ACTIONS, np.int8) if ended else r["masks"][0].view(np.int8).copy(),
            "score": int(r["score"][0]),
            "runs": int(r["runs"][0]),
            "moves": int(r["moves"][0]),
            "num_legal": int(r["num_legal"][0]),
            "illegal": bool(r["illegal"][0]),
        }
        if ended and self.episode_key is not None:
            info[self.episode_key] = {
                "r": float(r["episode_return"][0]),
                "l": int(r["episode_length"][0]),
                "won": bool(r["episode_won"][0]),
                "runs": int(r["episode_runs"][0]),
            }
        return info

    def action_masks(self) -> NDArray[np.bool_]:
        """The legal actions now, as 1081 booleans (what MaskablePPO asks for)."""
        if self._last is None:
            raise gym.error.ResetNeeded("call reset before action_masks")
        if self._ended:
            return np.ones(NUM_ACTIONS, np.bool_)  # see the class: an ended game's mask
        # A copy: the caller's to write into, as info["action_mask"] is.
        mask: NDArray[np.bool_] = self._last["masks"][0].view(np.bool_).copy()
        return mask

    def hint(self) -> tuple[int, str]:
        """The server's recommended action now (its greedy agent, which sees
        only what a player sees) and the reason, e.g. (245, "turns a
        face-down card")."""
        if self._last is None:
            raise gym.error.ResetNeeded("call reset before hint")
        if self._ended:
            raise gym.error.ResetNeeded("the episode has ended: call reset before hint")
        h = self.client.hint(0)
        return h["action"], h["reason"]

    def render(self) -> str | NDArray[np.uint8] | None:
        """The board: text (render_mode "ansi") or a (480, 640, 3) uint8
        picture (render_mode "rgb_array"), as a player sees it."""
        if self._last is None:
            raise gym.error.ResetNeeded("call reset before render")
        if self.render_mode == "ansi":
            return self.client.render(0)
        if self.render_mode == "rgb_array":
            return self.client.render_rgb(0)
        return None

    def close(self) -> None:
        """Close the connection and stop the server this env started. A
        later :meth:`reset` opens anew (a new server unless given an
        address) and deals what it would have dealt; :meth:`step`,
        :meth:`render` and :meth:`hint` raise until then. So does an env
        whose connection a fault closed (an interrupt, a broken, killed or
        idle server): its next reset closes and opens anew, and starts a
        new episode from this env's own count of them, whatever the server
        had played."""
        backend = getattr(self, "_backend", None)
        if backend is not None:
            backend.close()
            self._closed = True


class SpiderVectorEnv(gym.vector.VectorEnv[NDArray[Any], NDArray[Any], NDArray[Any]]):
    """A batch of ``num_envs`` games stepped together by one server request.

    Takes the arguments of :class:`SpiderEnv` (``config`` and the game's
    keyword arguments among them) and ``autoreset_mode``:
    ``"next-step"`` (gymnasium's default), ``"same-step"`` or ``"disabled"``
    (or a :class:`gymnasium.vector.AutoresetMode`), which the server carries
    out.
    ``workers`` sets the server's worker goroutines for this batch (0: its
    default). ``step`` takes exactly ``num_envs`` integer ids, shape
    (num_envs,), under the rules of :class:`SpiderEnv`'s actions.
    ``max_episode_steps``, which ``gymnasium.make_vec`` passes from a
    registered spec or its caller, is the step limit ``max_steps`` (the
    two, given together, must agree); sync vectorization adds a TimeLimit
    instead, over the env's own limit of 1000 by default.

    ``step`` returns observations of shape (num_envs, obs_len), float32
    rewards and bool terminations and truncations; every array is new and
    writable. ``infos`` follow gymnasium's vector conventions: each key an
    array over the games with a ``_key`` boolean array saying which games
    have it: ``action_mask`` (int8, (num_envs, 1081)), ``score``, ``runs``,
    ``moves``, ``num_legal``, ``illegal``; where games ended, the episode
    statistics {``r``, ``l``, ``won``, ``runs``}, each with its ``_key``
    mask as SyncVectorEnv nests them, under ``episode_key``
    (default ``"spider_episode"``, leaving ``"episode"`` to wrappers). With
    same-step autoreset, as Gymnasium's ``SyncVectorEnv`` of
    :class:`SpiderEnv` games, the infos at the top are the new episodes',
    and ``final_obs`` (an object array holding the ended games' last
    observations) and ``final_info`` hold the ended ones': their
    ``action_mask`` (all ones), ``score``, ``runs``, ``moves``,
    ``num_legal`` (0), ``illegal`` and the episode statistics. Under next-step
    autoreset a game that ended has an all-ones mask row until the next
    step resets it (its action is ignored), and ``num_legal`` 0, the true
    count; under ``disabled`` its row is all zeros until a reset with
    ``reset_mask``.

    Seeds follow Gymnasium's vector envs: ``reset(seed=s)`` seeds game i
    with ``s + i``, so it deals what ``SpiderEnv().reset(seed=s + i)``
    deals, and each game's later episodes are the ones that single env
    would deal on each ``reset()``; ``reset(seed=[s0, None, ...])`` seeds
    each game with its own seed, a None game going on to its next episode.

    ``render_mode`` ``"rgb_array"`` renders every game's board as a
    (480, 640, 3) uint8 picture, ``"ansi"`` as text: a tuple, one per
    game, as Gymnasium's vector envs render.

    Shared memory: on a Unix socket (the default: the env's own server) the
    batch's arrays live in memory the server shares with this process, so
    a step moves no arrays through the socket (``shm=None``, the default,
    uses it where the server offers it; ``True`` requires it; ``False``
    uses the socket). :attr:`shared` says which path is in use and
    :attr:`shm_error` why shared memory was not had. The results are the
    same either way. With ``copy=True`` (the default, Gymnasium's) every
    array returned is new; with ``copy=False`` and shared memory the
    observations, masks and final observations are read-only views of the
    shared arrays, overwritten by the next step or reset: no copy at all.
    ``mask`` is the masks' form on the socket (default ``"bits"``, 136
    bytes a game, unpacked here by numpy); shared memory holds bytes.

    Legal actions: with ``legal_actions=True`` infos also hold
    ``legal_actions``, (n, 1081) int16, row i starting with game i's legal
    actions in increasing order (OpenSpiel's ``legal_actions``), the first
    ``infos["num_legal"][i]`` of the row; the rest is stale. A policy that
    picks among them (the first, a uniform one) reads a few ids per game
    instead of scanning a 1081-byte mask row: ``legal[np.arange(n),
    (u * num_legal).astype(int)]``, u uniform in [0, 1), n the rows
    returned. A game the next step restarts (next-step autoreset) lists
    every id, as its all-ones mask row allows (its action is ignored), with
    ``num_legal`` 0 in the infos of the step that ended it and 1081 in a
    reset's. With shared memory the server writes the lists beside the
    masks; over the socket they are computed here from the masks.

    Asynchronous stepping: :meth:`step_async` sends the step and returns
    at once, :meth:`step_wait` waits for its results, so the policy can
    work while the server steps. :meth:`send` and :meth:`recv` are
    EnvPool's: ``send(actions, env_ids)`` steps only the games
    ``env_ids`` (one action each), and ``recv()`` returns their results,
    rows in the order of ``env_ids`` and ``infos["env_id"]`` naming them;
    a loop can step half the games while the policy computes on the other
    half. One step is in flight at a time.
    """

    metadata: dict[str, Any] = {  # noqa: RUF012 (gymnasium's convention)
        "autoreset_mode": AutoresetMode.NEXT_STEP,
        "render_modes": ["ansi", "rgb_array"],
        "render_fps": 4,
    }

    # Their own types, not gymnasium's Space (see SpiderEnv).
    single_observation_space: spaces.Box
    single_action_space: spaces.Discrete
    observation_space: spaces.Box
    action_space: spaces.MultiDiscrete

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
        episode_key: str | None = "spider_episode",
        timeout: float | None = DEFAULT_TIMEOUT,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        workers: int = 0,
        shm: bool | None = None,
        copy: bool = True,
        legal_actions: bool = False,
        max_episode_steps: int | None = None,
        batch_size: int | None = None,
        **game: Any,
    ):
        if batch_size is not None and batch_size != num_envs:
            # EnvPool's asynchronous mode (recv returns the first batch_size
            # games to finish) has no counterpart: one step is in flight at
            # a time, and recv returns the games send stepped.
            raise ValueError(
                f"batch_size={batch_size}: only EnvPool's synchronous mode is offered (batch_size = num_envs = "
                f"{num_envs}); send(actions, env_ids) and recv() step some games while the policy works on the others"
            )
        config = SpiderConfig.resolve(config)  # a mapping of its fields too
        if max_episode_steps is not None:
            # gymnasium.make_vec passes a spec's or caller's horizon to the
            # vector entry point, where sync mode would add a TimeLimit:
            # here it is the server's step limit, which truncates the same way.
            given = game.get("max_steps", config.max_steps)
            if given is not None and given != max_episode_steps:
                raise ValueError(
                    f"max_episode_steps={max_episode_steps} and max_steps={given} disagree: "
                    "give one (max_episode_steps is the step limit, max_steps)"
                )
            game["max_steps"] = max_episode_steps
        game_config = SpiderConfig.resolve(config, **game)
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        if render_mode is not None and render_mode not in ("ansi", "rgb_array"):
            raise ValueError(f"render_mode {render_mode!r}: want 'ansi', 'rgb_array' or None")
        mode = _autoreset_mode(autoreset_mode)
        self.num_envs = int(num_envs)
        self.render_mode = render_mode
        self.episode_key = _episode_key(episode_key)
        self.autoreset_mode = mode
        self.metadata = {"autoreset_mode": mode, "render_modes": ["ansi", "rgb_array"], "render_fps": 4}
        _check_mask(mask)
        self._backend = _Backend(address, timeout)
        try:
            self.spider_spec: MakeReply = self._backend.client.make(
                game_config,
                n=self.num_envs,
                autoreset=_AUTORESET_NAMES[mode],
                illegal=illegal,
                illegal_penalty=illegal_penalty,
                mask=mask,
                workers=workers,
                shm=shm is not False and self._backend.unix,
                legal=legal_actions,
            )
            if shm and not self._backend.client.shared:
                why = self._backend.client.shm_error or "the address is not a Unix socket"
                raise ValueError(f"shm=True: no shared memory with this server: {why}")
        except BaseException:
            self._backend.close()
            raise
        self.copy = bool(copy)
        self.legal_actions = bool(legal_actions)
        self.config: SpiderConfig = self.spider_spec["config"]
        """The game the server made: its echo of every game option."""
        self.single_observation_space = _observation_space(self.spider_spec)
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = cast(spaces.Box, batch_space(self.single_observation_space, self.num_envs))
        self.action_space = spaces.MultiDiscrete(np.full(self.num_envs, NUM_ACTIONS, dtype=np.int64))
        self._last: StepReply | None = None
        self._sent: NDArray[np.int64] | None = None  # the games of the step in flight (send), or None
        self._all_sent = False  # a step_async of every game is in flight
        # async_reset's observations and infos, until recv returns them.
        self._reset_results: tuple[ObsArray, dict[str, Any]] | None = None
        self._actions = np.zeros(self.num_envs, np.int64)  # send's actions, one per game

    @property
    def shared(self) -> bool:
        """Whether the batch's arrays are in shared memory with the server."""
        return self.client.shared

    @property
    def shm_error(self) -> str | None:
        """Why shared memory was asked for and not had (None: had, or not asked)."""
        return self.client.shm_error

    @property
    def client(self) -> Client:
        """The protocol client of this env's connection."""
        return self._backend.client

    @property
    def server(self) -> SpiderServer | None:
        """The server this env started, if it started one."""
        return self._backend.server

    def __getstate__(self) -> dict[str, Any]:
        raise _uncopyable("SpiderVectorEnv", "copy single SpiderEnv games")

    def reset(
        self,
        env_id: npt.ArrayLike | None = None,
        *,
        seed: Seed | Seeds | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[ObsArray, dict[str, Any]]:
        """Reset games.

        ``env_id`` (EnvPool's ``reset(env_id)``: a game index or an array
        of them) resets only those games, to their next episode, and
        returns only their rows, in that order, ``infos["env_id"]`` naming
        them; it takes no seed or options (EnvPool seeds at creation), and
        before the first reset every game is reset first, as EnvPool's
        first reset is.

        ``seed`` (an int) resets every game, game i seeded with seed + i
        (the deal of ``SpiderEnv().reset(seed=seed + i)``); a list of
        num_envs seeds seeds each game with its own, a None game going on
        to its next episode; without one every game goes to its next
        episode (the first reset draws a seed from ``self.np_random``).
        ``options={"reset_mask": mask}`` (num_envs booleans) resets only
        those games, to their next episode: the way to restart ended games
        with autoreset disabled. With a seed too, as in Gymnasium, each
        chosen game is reset as that seed alone would reset it, and the
        others are left as they are, their seeds not read. A mask before the
        first reset is refused (``bad_order``); an all-false one resets no
        game (Gymnasium raises), though a seed still seeds ``np_random``.
        Infos after a masked reset hold every game's current values, their
        ``_key`` masks all True. A reset that fails leaves ``np_random``
        as it was: a refusal the server answered (the env goes on) is
        retried with the same draws; after a timeout or Ctrl-C the env is
        closed, and its generator can seed a new one.
        """
        if env_id is not None:
            return self._reset_games(env_id, seed, options)
        # Everything is checked before anything changes, np_random included.
        options = dict(options or {})
        reset_mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"unknown reset options {sorted(options)}; only 'reset_mask' is known")
        chosen = list(range(self.num_envs))
        if reset_mask is not None:
            reset_mask = np.asarray(reset_mask)
            if reset_mask.shape != (self.num_envs,) or reset_mask.dtype != np.bool_:
                raise ValueError(
                    f"options['reset_mask'] must be a bool array of shape ({self.num_envs},), "
                    f"got {reset_mask.dtype} {reset_mask.shape}"
                )
            if self._last is None:
                raise SpiderError("bad_order", "reset_mask before the first reset: reset the whole batch first")
            if self.client.pending:
                # The server has played it: the games left out would go on
                # from where it left them, with its results (an ended game,
                # say) never seen.
                raise RuntimeError("a step is in flight: recv (or step_wait) it before a reset of some games")
            chosen = [int(i) for i in np.flatnonzero(reset_mask)]
        seeds: list[int | None] | None = None
        if isinstance(seed, (str, bytes, bytearray, memoryview)):
            # Sequences too, of characters or bytes: never seeds.
            raise TypeError(f"a seed must be an integer or a sequence of them, not {type(seed).__name__}")
        if isinstance(seed, (Sequence, np.ndarray)):
            if len(seed) != self.num_envs:
                raise ValueError(f"{len(seed)} seeds for {self.num_envs} games")
            # As Gymnasium, the seeds of games a mask leaves out are not read.
            seeds = [None] * self.num_envs
            for i in chosen:
                item = seed[i]
                seeds[i] = None if item is None else _seed(item)
            seed = None
            if all(s is None for s in seeds):
                seeds = None
        elif seed is not None:
            seed = _seed(seed)
            last = chosen[-1] if chosen else 0
            if seed + last >= 2**64:
                # Game i is dealt seed + i, which must not wrap to another game's deal.
                raise ValueError(f"seed {seed} + {last} for game {last} is over 2**64-1")
        self._reset_results = None  # a reset replaces async_reset's results
        never_seeded = self._np_random is None
        # Gymnasium seeds the vector env's own generator with the first seed.
        first = seed if seeds is None else next((s for s in seeds if s is not None), None)
        with _generator_kept(self):
            if seeds is not None and self._last is None and reset_mask is None and None in seeds:
                # No episode to go on with yet: a None game is dealt at random,
                # as SyncVectorEnv's game is, from the generator as it was (fresh
                # entropy if never seeded), not from the one the other seeds
                # set below, which would deal it the same in every run.
                rng = np.random.default_rng() if never_seeded else self.np_random
                seeds = [int(rng.integers(0, 2**63)) if s is None else s for s in seeds]
            super().reset(seed=first)
            if reset_mask is not None and seed is not None:
                # Gymnasium seeds chosen game i with seed + i; the server's seed
                # with a mask resets every game, its seeds only the chosen ones.
                seeds, seed = [seed + i if m else None for i, m in enumerate(reset_mask)], None
            if seeds is None and reset_mask is None and seed is None and (never_seeded or self._last is None):
                seed = int(self.np_random.integers(0, 2**63))
            with _whole(self.client, "reset"):
                self._discard_pending()
                if seeds is not None:
                    r = self._own(self.client.reset(seeds=seeds, reset_mask=reset_mask))
                else:
                    r = self._own(self.client.reset(seed=seed, reset_mask=reset_mask))
                self._last = r
        return r["obs"], self._infos(r, with_episode=False)

    def _reset_games(self, env_id: npt.ArrayLike, seed: object, options: object) -> tuple[ObsArray, dict[str, Any]]:
        """reset(env_id): EnvPool's reset of some games, their rows only."""
        if seed is not None or options:
            raise ValueError("reset(env_id) takes no seed or options (EnvPool's form); use options={'reset_mask': ...}")
        ids, _ = self._game_ids(env_id)
        if self._last is None:
            obs, infos = self.reset()  # every game's first episode
        else:
            mask = np.zeros(self.num_envs, np.bool_)
            mask[ids] = True
            obs, infos = self.reset(options={"reset_mask": mask})
        rows: dict[str, Any] = {
            k: v[ids] if isinstance(v, np.ndarray) and v.shape[:1] == (self.num_envs,) else v for k, v in infos.items()
        }
        rows["env_id"] = ids.astype(np.int32)
        return obs[ids], rows

    def step(
        self, actions: npt.ArrayLike, env_id: npt.ArrayLike | None = None
    ) -> tuple[ObsArray, NDArray[np.float32], NDArray[np.bool_], NDArray[np.bool_], dict[str, Any]]:
        """Step every game, one action each. With ``env_id`` (EnvPool's
        ``step(action, env_id)``) only those games: :meth:`send` then
        :meth:`recv`, their rows in that order and ``infos["env_id"]``
        naming them."""
        if env_id is not None:
            self.send(actions, env_id=env_id)
            return self.recv()
        # step_async then step_wait, as one request: a Ctrl-C landing
        # between the two left the step in flight, and the next step
        # refused to start.
        ids = self._step_ids(actions)
        with _whole(self.client, "step"):
            self.client.step_send(ids)
            r = self._own(self._receive())
            self._last = r
        return r["obs"], r["rewards"], r["terminated"], r["truncated"], self._infos(r, with_episode=True)

    def _receive(self) -> StepReply:
        """The sent step's reply. Under disabled autoreset a step of a game
        that has ended is gymnasium's ResetNeeded, as a SyncVectorEnv of
        SpiderEnv games raises it; the server refused it as episode_over,
        changing nothing."""
        try:
            return self.client.step_receive()
        except SpiderError as e:
            if _episode_over(e):
                raise gym.error.ResetNeeded(e.message) from e
            raise

    def step_async(self, actions: npt.ArrayLike) -> None:
        """Send the step (one action per game) and return at once, while the
        server steps; :meth:`step_wait` returns what :meth:`step` would."""
        ids = self._step_ids(actions)
        with _whole(self.client, "step_async"):
            self.client.step_send(ids)
            self._all_sent = True

    def _step_ids(self, actions: npt.ArrayLike) -> NDArray[np.int64]:
        """The action ids of a step of every game, once a step may start."""
        if self._last is None:
            raise gym.error.ResetNeeded("call reset before step")
        if self.client.pending:
            raise RuntimeError("a step is in flight: call step_wait (or recv) first")
        if self._reset_results is not None:
            raise RuntimeError("async_reset's results are waiting: call recv first")
        return _action_ids(actions, (self.num_envs,))

    def step_wait(
        self, timeout: float | None = None
    ) -> tuple[ObsArray, NDArray[np.float32], NDArray[np.bool_], NDArray[np.bool_], dict[str, Any]]:
        """The results of the step :meth:`step_async` sent.

        ``timeout`` (seconds; None: as long as the env's own ``timeout``
        allows) is the wait of Gymnasium's ``AsyncVectorEnv.step_wait``:
        if the reply has not begun to come by then, it raises
        ``multiprocessing.TimeoutError``, as that env does, and the step
        stays in flight, so a later ``step_wait`` still returns it (where
        AsyncVectorEnv drops it and goes back to its default state). Until
        then a ``step_async`` or ``step`` is refused; a ``reset`` first
        reads the step's reply and drops it (waiting for it as long as the
        env's own ``timeout`` allows), and ``close`` abandons it."""
        if not self._all_sent:
            raise RuntimeError(
                "step_wait without step_async" + (" (send's step needs recv)" if self._sent is not None else "")
            )
        if timeout is not None and not self.client.wait_reply(timeout):
            raise multiprocessing.TimeoutError(
                f"step_wait: the step's reply has not come within {float(timeout):g} s; it is still in flight "
                "(call step_wait again)"
            )
        with _whole(self.client, "step_wait"):
            self._all_sent = False
            r = self._own(self._receive())
            self._last = r
        return r["obs"], r["rewards"], r["terminated"], r["truncated"], self._infos(r, with_episode=True)

    def async_reset(
        self,
        *,
        seed: Seed | Seeds | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        """EnvPool's ``async_reset``: reset every game as :meth:`reset` does
        (seeds and options the same) and keep the results for the next
        :meth:`recv`, which returns every game's first observation, rewards
        0, no game ended and ``infos["env_id"]`` naming every game, so that
        EnvPool's loop (``async_reset()``, then ``recv()`` and ``send(actions,
        infos["env_id"])`` in turn) runs as it is. Until that recv, a step
        or send is refused."""
        obs, infos = self.reset(seed=seed, options=options)
        self._reset_results = (obs, infos)

    def send(
        self, actions: npt.ArrayLike, env_ids: npt.ArrayLike | None = None, *, env_id: npt.ArrayLike | None = None
    ) -> None:
        """Step the games ``env_ids`` (all when None), one action each in that
        order, and return at once; :meth:`recv` returns their results.
        EnvPool's ``send``: the policy can compute on other games meanwhile
        (``env_id``, EnvPool's name, is the same; one index is one game)."""
        if env_id is not None:
            if env_ids is not None:
                raise TypeError("give env_ids or env_id, not both")
            env_ids = env_id
        if self._reset_results is not None:
            raise RuntimeError("async_reset's results are waiting: call recv first")
        if env_ids is None:
            self.step_async(actions)
            return
        if self._last is None:
            raise gym.error.ResetNeeded("call reset before send")
        if self.client.pending:
            raise RuntimeError("a step is in flight: call recv (or step_wait) first")
        ids, ordered = self._game_ids(env_ids)
        if np.ndim(env_ids) == 0 and np.ndim(actions) == 0:
            actions = np.reshape(actions, 1)  # one game, as EnvPool takes it, with its one action
        acts = _action_ids(actions, ids.shape)
        self._actions[ids] = acts
        with _whole(self.client, "send"):
            self.client.step_send(self._actions, env_ids=ordered)
            self._sent = ids

    def _game_ids(self, env_ids: npt.ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Game indices as send and reset(env_id) take them (an index, or a
        1-d integer array, each game once), and the same sorted."""
        ids = np.asarray(env_ids)
        given = ids.shape
        if ids.ndim == 0:
            ids = ids.reshape(1)
        if ids.size == 0 and ids.dtype.kind == "f":
            ids = ids.astype(np.int64)  # [] names no game, as the protocol allows
        if ids.dtype.kind not in "iu" or ids.ndim != 1:
            raise TypeError(f"env_ids must be a 1-d array of game indices, got {ids.dtype} of shape {given}")
        ids = ids.astype(np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_envs):
            raise ValueError(f"env_ids must be 0 to {self.num_envs - 1}")
        ordered = np.sort(ids, kind="stable")
        if ordered.size > 1 and not (np.diff(ordered) > 0).all():
            raise ValueError("env_ids names a game twice")
        return ids, ordered

    def recv(self) -> tuple[ObsArray, NDArray[np.float32], NDArray[np.bool_], NDArray[np.bool_], dict[str, Any]]:
        """The results of the games :meth:`send` stepped, in its order of
        ``env_ids`` (every game after a send of all): observations, rewards,
        terminations, truncations and infos, with ``infos["env_id"]``
        (after :meth:`async_reset`, every game's first observation)."""
        if self._reset_results is not None:
            obs, infos = self._reset_results
            self._reset_results = None
            n = self.num_envs
            return obs, np.zeros(n, np.float32), np.zeros(n, np.bool_), np.zeros(n, np.bool_), infos
        if self._all_sent:
            return self.step_wait()
        ids = self._sent
        if ids is None:
            raise RuntimeError("recv without send")
        with _whole(self.client, "recv"):
            self._sent = None
            full = self._receive()
            # Rows of the games stepped, new arrays; the whole batch's current
            # state stays for action_masks.
            by_key = cast(Mapping[str, NDArray[Any]], full)
            lo = int(ids[0]) if ids.size else 0
            if ids.size and int(ids[-1]) - lo + 1 == ids.size and (np.diff(ids) == 1).all():
                # A run of games (EnvPool's halves): rows sliced, not gathered,
                # and like step's, views of shared memory with copy=False.
                run = slice(lo, lo + ids.size)
                sub = {
                    k: v[run].copy() if self.copy or v.ndim == 1 or not self.client.shared else v[run]
                    for k, v in by_key.items()
                }
            else:
                sub = {k: np.ascontiguousarray(v[ids]) for k, v in by_key.items()}
            # The batch's state for action_masks: owned, like step's, unless copy=False.
            self._last = {**full, "masks": full["masks"].copy()} if self.copy and self.client.shared else full
        r: StepReply = sub  # type: ignore[assignment]
        infos = self._infos(r, with_episode=True)
        infos["env_id"] = ids.astype(np.int32)
        return r["obs"], r["rewards"], r["terminated"], r["truncated"], infos

    def _discard_pending(self) -> None:
        """Finish the step in flight and drop its results, or its error: a
        reset of every game replaces what it did. (It cannot be cancelled:
        the server plays a step as it arrives.)"""
        self._sent, self._all_sent = None, False
        self.client.discard()

    def _own(self, r: StepReply) -> StepReply:
        """The reply as this env returns it: with shared memory, the small
        arrays copied always (they are cheap) and the large ones unless
        ``copy`` is False."""
        if not self.client.shared:
            return r
        by_key = cast(Mapping[str, NDArray[Any]], r)
        out = {k: (v.copy() if self.copy or v.ndim == 1 else v) for k, v in by_key.items()}
        return out  # type: ignore[return-value]

    def _infos(self, r: StepReply, with_episode: bool) -> dict[str, Any]:
        n = len(r["rewards"])
        ones = np.ones((7, n), np.bool_)  # one row for each key's "_key"
        infos: dict[str, Any] = {"action_mask": r["masks"].view(np.int8), "_action_mask": ones[0]}
        # EnvPool's key, in every infos (recv's and a reset's of some games
        # name the games they hold).
        infos["env_id"], infos["_env_id"] = np.arange(n, dtype=np.int32), ones[6]
        by_key: Mapping[str, object] = r
        for j, key in enumerate(_INFO_KEYS, 1):
            infos[key] = by_key[key]
            infos["_" + key] = ones[j]
        if self.legal_actions:
            infos["legal_actions"] = r["legal"] if "legal" in r else _legal_lists(r["masks"])
            infos["_legal_actions"] = np.ones(n, np.bool_)
        if not with_episode:
            return infos
        done = r["terminated"] | r["truncated"]
        if self.autoreset_mode == AutoresetMode.NEXT_STEP and done.any():
            # The server's all-ones row counts 1081 ids, every one ignored:
            # num_legal says the truth, no legal move.
            infos["num_legal"] = np.where(done, 0, infos["num_legal"]).astype(infos["num_legal"].dtype)
        if self.episode_key is not None and done.any() and self.autoreset_mode != AutoresetMode.SAME_STEP:
            infos[self.episode_key] = self._episode(r, done)
            infos["_" + self.episode_key] = done
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            has_final = r["has_final"]
            # A game that restarted shows its new episode, as score, runs and
            # moves do; the ended step's flag is in final_info.
            infos["illegal"] = r["illegal"] & ~has_final
            if has_final.any():
                final_obs = np.full(n, None, dtype=object)
                rows = r["final_obs"]
                for i in np.flatnonzero(has_final):
                    final_obs[i] = rows[i]
                # The ended step's info, as SyncVectorEnv's final_info holds
                # a SpiderEnv's: an all-ones mask (the game is over; no
                # action of it is played) and no legal move.
                final_info: dict[str, Any] = {
                    "action_mask": np.repeat(has_final.astype(np.int8)[:, None], NUM_ACTIONS, axis=1),
                    "score": np.where(has_final, r["final_score"], 0).astype(np.int32),
                    "runs": np.where(has_final, r["episode_runs"], 0).astype(np.uint8),
                    "moves": np.where(has_final, r["episode_length"], 0).astype(np.int32),
                    "num_legal": np.zeros(n, infos["num_legal"].dtype),
                    "illegal": r["illegal"] & has_final,
                }
                for key in ("action_mask", "score", "runs", "moves", "num_legal", "illegal"):
                    final_info["_" + key] = has_final.copy()
                if self.episode_key is not None:
                    final_info[self.episode_key] = self._episode(r, has_final)
                    final_info["_" + self.episode_key] = has_final.copy()
                infos["final_obs"] = final_obs
                infos["_final_obs"] = has_final.copy()
                infos["final_info"] = final_info
                infos["_final_info"] = has_final.copy()
        return infos

    @staticmethod
    def _episode(r: StepReply, where: NDArray[np.bool_]) -> dict[str, NDArray[Any]]:
        """The ended episodes' statistics, each key with its ``_key`` mask,
        as SyncVectorEnv nests a SpiderEnv's dict (code written for one
        reads ``ep["_r"]``)."""
        ep: dict[str, NDArray[Any]] = {
            "r": np.where(where, r["episode_return"], 0).astype(np.float32),
            "l": np.where(where, r["episode_length"], 0).astype(np.int32),
            "won": r["episode_won"] & where,
            "runs": np.where(where, r["episode_runs"], 0).astype(np.uint8),
        }
        for key in ("r", "l", "won", "runs"):
            ep["_" + key] = where.copy()
        return ep

    def action_masks(self) -> NDArray[np.bool_]:
        """The legal actions of every game now, (num_envs, 1081) booleans:
        a new array, or with ``copy=False`` a read-only view that the next
        step overwrites, like the others. Until the next step it is read
        from the same memory as ``infos["action_mask"]``: a write into that
        array changes what this returns (a copy for each would cost a
        second (num_envs, 1081) copy a step)."""
        if self._last is None:
            raise gym.error.ResetNeeded("call reset before action_masks")
        masks: NDArray[np.bool_] = self._last["masks"].view(np.bool_)
        if self.copy:
            # Not the infos' own array: writing into the result must not
            # change the infos. (Not read-only either: torch warns on such
            # arrays.)
            owned: NDArray[np.bool_] = masks.copy()
            return owned
        masks.flags.writeable = False
        return masks

    def hint(self, index: int = 0) -> tuple[int, str]:
        """The server's recommended action for game ``index`` and the reason.
        A game that has ended has none: under disabled autoreset that is
        gymnasium's ResetNeeded, as for its step; under the other modes, in
        the step before it restarts, a :class:`SpiderError` with code
        ``episode_over``."""
        if self._last is None:
            raise gym.error.ResetNeeded("call reset before hint")
        try:
            h = self.client.hint(int(index))
        except SpiderError as e:
            if _episode_over(e) and self.autoreset_mode == AutoresetMode.DISABLED:
                raise gym.error.ResetNeeded(e.message) from e
            raise
        return h["action"], h["reason"]

    def render(self) -> tuple[str, ...] | tuple[NDArray[np.uint8], ...] | None:
        """Every game's board, a tuple with one per game: a (480, 640, 3)
        uint8 picture (render_mode "rgb_array") or text (render_mode
        "ansi")."""
        if self._last is None:
            raise gym.error.ResetNeeded("call reset before render")
        if self.render_mode == "ansi":
            return tuple(self.client.render(i) for i in range(self.num_envs))
        if self.render_mode == "rgb_array":
            return tuple(self.client.render_rgb(i) for i in range(self.num_envs))
        return None

    def close_extras(self, **kwargs: Any) -> None:
        """Close the connection and stop the server this env started. Unlike
        :class:`SpiderEnv`, a closed vector env does not open again: a later
        ``reset``, ``step``, ``hint`` or picture (``render`` in ``ansi`` or
        ``rgb_array`` mode) raises ``SpiderError`` (``closed``), as
        Gymnasium's ``AsyncVectorEnv`` raises once closed; make a new one."""
        backend = getattr(self, "_backend", None)
        if backend is not None:
            backend.close()
