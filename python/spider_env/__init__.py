"""Spider Solitaire for reinforcement learning: gymnasium environments backed
by the Go ``spider serve`` server (see PROTOCOL.md in the repository).

    import gymnasium, spider_env
    env = gymnasium.make("Spider-v0", rules="cardems", suits=1)
    envs = gymnasium.make_vec("Spider-v0", num_envs=64, vectorization_mode="vector_entry_point")

The game's options are the fields of :class:`SpiderConfig`; those not given
are the server's defaults.
"""

import gymnasium

from ._client import (
    NUM_ACTIONS,
    PROTOCOL_VERSION,
    Address,
    Client,
    HelloReply,
    HintReply,
    MakeReply,
    ObsArray,
    SpiderError,
    SpiderValueError,
    StepReply,
)
from ._server import SpiderServer, find_binary
from ._version import __version__
from .config import SpiderConfig
from .envs import SpiderEnv, SpiderVectorEnv
from .policy import POLICY_PROTOCOL_VERSION, PolicyServer, evaluate, serve_policy

__all__ = [
    "NUM_ACTIONS",
    "POLICY_PROTOCOL_VERSION",
    "PROTOCOL_VERSION",
    "Address",
    "Client",
    "HelloReply",
    "HintReply",
    "MakeReply",
    "ObsArray",
    "PolicyServer",
    "SpiderConfig",
    "SpiderEnv",
    "SpiderError",
    "SpiderServer",
    "SpiderValueError",
    "SpiderVectorEnv",
    "StepReply",
    "__version__",
    "evaluate",
    "find_binary",
    "serve_policy",
]

ENV_ID = "Spider-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(
        id=ENV_ID,
        entry_point="spider_env.envs:SpiderEnv",
        vector_entry_point="spider_env.envs:SpiderVectorEnv",
        # The server truncates at max_steps; no TimeLimit wrapper is added.
        max_episode_steps=None,
        # Only the environment's own choice: the game's options default to the server's.
        kwargs={"illegal": "noop"},
    )
