"""Gymnasium wrappers for libraries that want the action mask inside the
observation: RLlib's action-masking RLModule and Tianshou.

    env = MaskInObservation(SpiderEnv(suits=1, obs="float32"))
    obs, info = env.reset(seed=0)
    obs["observations"]   # the game's observation
    obs["action_mask"]    # 1081 float32, 1.0 where legal

The default layout, a Dict space with ``"observations"`` and
``"action_mask"`` (a ``Box(0, 1, (1081,), float32)``), is the one RLlib's
``ActionMaskingTorchRLModule`` example reads. ``layout="tianshou"`` gives
``{"obs": obs, "mask": mask}`` with a bool mask instead, which Tianshou's
masked policies read as ``batch.obs.obs`` and ``batch.obs.mask``. Only
gymnasium is needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, SupportsFloat, TypedDict, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from numpy.typing import NDArray

__all__ = ["Layout", "MaskInObservation", "VectorMaskInObservation"]


class MaskedObs(TypedDict):
    """``{"observations": ..., "action_mask": ...}``: the wrapped env's
    observation and the mask as float32 0.0 and 1.0 (one row a game in the
    vector form). The type of the default layout only: under
    ``layout="tianshou"`` the keys are ``obs`` and ``mask``, the mask bool."""

    observations: NDArray[Any]
    action_mask: NDArray[np.float32]


if TYPE_CHECKING:
    _VectorWrapper = gym.vector.VectorWrapper[Any, Any, Any, Any, Any]
else:  # not subscriptable at run time before gymnasium 1.3
    _VectorWrapper = gym.vector.VectorWrapper


Layout = Literal["rllib", "tianshou"]
"""The observation layouts the wrappers offer."""

# LAYOUTS names the observation's two keys and the mask's dtype for each
# layout the wrappers offer.
LAYOUTS: dict[str, tuple[str, str, type[np.generic]]] = {
    "rllib": ("observations", "action_mask", np.float32),
    "tianshou": ("obs", "mask", np.bool_),
}


def _layout(layout: object, what: str) -> tuple[str, str, type[np.generic]]:
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise ValueError(f"{what}: layout must be one of {', '.join(map(repr, LAYOUTS))}, got {layout!r}")
    return LAYOUTS[layout]


def _mask_space(n: int, dtype: type[np.generic]) -> spaces.Box:
    # Box(0, 1) of the mask's dtype: bool is False and True.
    return spaces.Box(0, 1, shape=(n,), dtype=np.dtype(dtype))


def _obs_box(space: spaces.Space[Any], float32: bool, what: str) -> spaces.Box:
    if not isinstance(space, spaces.Box):
        raise TypeError(f"{what} needs a Box observation space, got {space}")
    if not float32 or space.dtype == np.float32:
        return space
    return spaces.Box(
        low=space.low.astype(np.float32), high=space.high.astype(np.float32), shape=space.shape, dtype=np.float32
    )


def _num_actions(space: spaces.Space[Any], what: str) -> int:
    if not isinstance(space, spaces.Discrete):
        raise TypeError(f"{what} needs a Discrete action space, got {space}")
    return int(space.n)


class MaskInObservation(gym.ObservationWrapper[MaskedObs, Any, NDArray[Any]], gym.utils.RecordConstructorArgs):
    """Observations as ``{"observations": obs, "action_mask": mask}`` (or,
    with ``layout="tianshou"``, ``{"obs": obs, "mask": mask}``, the mask
    bool).

    ``observations`` is the wrapped env's observation (its Box space; with
    ``float32=True`` cast to float32, e.g. the compact uint8 encoding for a
    model that wants floats). ``action_mask`` is 1081 float32 of 0.0 and
    1.0 (bool under ``layout="tianshou"``), taken from
    ``info["action_mask"]`` after every reset and step (or from the env's
    ``action_masks()`` when the info has none). A
    :class:`~spider_env.SpiderEnv` whose episode ended gives all ones there
    until the reset, so a masked sampler never meets an empty mask.
    """

    def __init__(self, env: gym.Env[NDArray[Any], Any], *, float32: bool = False, layout: Layout = "rllib"):
        self._obs_key, self._mask_key, self._mask_dtype = _layout(layout, "MaskInObservation")
        # Recorded in env.spec, so that gymnasium.make(env.spec) and
        # check_env can build the wrapped env again, as Gymnasium's own.
        gym.utils.RecordConstructorArgs.__init__(self, float32=float32, layout=layout)
        gym.ObservationWrapper.__init__(self, env)
        self._inner = env
        self._box = _obs_box(env.observation_space, float32, "MaskInObservation")
        n = _num_actions(env.action_space, "MaskInObservation")
        # A Dict of the two, which gymnasium types as a space of dict[str, Any].
        self.observation_space = cast(
            "spaces.Space[MaskedObs]",
            spaces.Dict({self._obs_key: self._box, self._mask_key: _mask_space(n, self._mask_dtype)}),
        )
        self._mask: NDArray[Any] = np.ones(n, self._mask_dtype)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[MaskedObs, dict[str, Any]]:
        obs, info = self._inner.reset(seed=seed, options=options)
        self._mask = self._mask_of(info)
        return self.observation(obs), info

    def step(
        self, action: int | np.integer[Any] | NDArray[np.integer[Any]]
    ) -> tuple[MaskedObs, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self._inner.step(action)
        self._mask = self._mask_of(info)
        return self.observation(obs), reward, terminated, truncated, info

    def observation(self, observation: NDArray[Any]) -> MaskedObs:
        return cast(
            MaskedObs, {self._obs_key: np.asarray(observation, dtype=self._box.dtype), self._mask_key: self._mask}
        )

    def _mask_of(self, info: dict[str, Any]) -> NDArray[Any]:
        mask = info.get("action_mask")
        if mask is None:
            mask = self._inner.get_wrapper_attr("action_masks")()
        return np.asarray(mask, dtype=self._mask_dtype)


class VectorMaskInObservation(_VectorWrapper, gym.utils.RecordConstructorArgs):
    """:class:`MaskInObservation` for a vector env (a
    :class:`~spider_env.SpiderVectorEnv`, or any vector env whose infos
    carry ``action_mask``): observations ``{"observations": (n, obs_len),
    "action_mask": (n, 1081) float32}`` (``{"obs", "mask"}``, the masks bool,
    under ``layout="tianshou"``), one row per game, for the masks of
    the observations returned (under next-step autoreset an ended game's
    row is all ones until the step that resets it). Under same-step
    autoreset each ended game's ``infos["final_obs"]`` is such a dict too,
    as Gymnasium's own observation wrappers convert it, with a mask of all
    ones: the server sends no final masks, and a learner only values that
    observation."""

    def __init__(self, env: gym.vector.VectorEnv[Any, Any, Any], *, float32: bool = False, layout: Layout = "rllib"):
        self._obs_key, self._mask_key, self._mask_dtype = _layout(layout, "VectorMaskInObservation")
        gym.utils.RecordConstructorArgs.__init__(self, float32=float32, layout=layout)
        _VectorWrapper.__init__(self, env)
        self._inner = env
        self._box = _obs_box(env.single_observation_space, float32, "VectorMaskInObservation")
        n = _num_actions(env.single_action_space, "VectorMaskInObservation")
        self._n = n
        self.single_observation_space = spaces.Dict(
            {self._obs_key: self._box, self._mask_key: _mask_space(n, self._mask_dtype)}
        )
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self._mask: NDArray[Any] | None = None  # the masks last returned

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[MaskedObs, dict[str, Any]]:
        obs, infos = self._inner.reset(seed=seed, options=options)  # type: ignore[arg-type]
        return self._masked(obs, infos), infos

    def step(
        self, actions: NDArray[np.integer[Any]] | Sequence[int]
    ) -> tuple[MaskedObs, NDArray[np.float32], NDArray[np.bool_], NDArray[np.bool_], dict[str, Any]]:
        obs, rewards, terminations, truncations, infos = self._inner.step(actions)
        final = infos.get("final_obs")
        if final is not None:
            infos["final_obs"] = np.array(
                [
                    None
                    if o is None
                    else {
                        self._obs_key: np.asarray(o, self._box.dtype),
                        self._mask_key: np.ones(self._n, self._mask_dtype),
                    }
                    for o in final
                ],
                dtype=object,
            )
        return self._masked(obs, infos), rewards, terminations, truncations, infos

    def _masked(self, obs: NDArray[Any], infos: dict[str, Any]) -> MaskedObs:
        mask = infos.get("action_mask")
        if mask is None:
            mask = self._inner.unwrapped.action_masks()  # type: ignore[attr-defined]
        rows: NDArray[Any] = np.array(mask, dtype=self._mask_dtype)
        have = infos.get("_action_mask")
        if have is not None and self._mask is not None and not np.all(have):
            # Gymnasium's vector envs give zeros for the games that gave no
            # info (those a masked reset left alone): their masks are
            # still the ones last returned.
            keep = ~np.asarray(have, dtype=np.bool_)
            rows[keep] = self._mask[keep]
        self._mask = rows
        return cast(MaskedObs, {self._obs_key: np.asarray(obs, dtype=self._box.dtype), self._mask_key: rows})
