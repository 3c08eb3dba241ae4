"""Spider Solitaire for reinforcement learning: gymnasium environments backed
by the Go ``spider serve`` server (see PROTOCOL.md in the repository).

    import gymnasium, spider_env
    env = gymnasium.make("Spider-v0", rules="cardems", suits=1)
    envs = gymnasium.make_vec("Spider-v0", num_envs=64, vectorization_mode="vector_entry_point")
"""

import gymnasium

from ._client import NUM_ACTIONS, PROTOCOL_VERSION, Client, SpiderError
from ._server import SpiderServer, find_binary
from .envs import SpiderEnv, SpiderVectorEnv

__all__ = [
    "Client",
    "NUM_ACTIONS",
    "PROTOCOL_VERSION",
    "SpiderEnv",
    "SpiderError",
    "SpiderServer",
    "SpiderVectorEnv",
    "find_binary",
]

__version__ = "0.1.0"

ENV_ID = "Spider-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(
        id=ENV_ID,
        entry_point="spider_env.envs:SpiderEnv",
        vector_entry_point="spider_env.envs:SpiderVectorEnv",
        # The server truncates at max_steps; no TimeLimit wrapper is added.
        max_episode_steps=None,
        kwargs={"rules": "classic", "suits": 1, "obs": "compact", "max_steps": 1000, "illegal": "noop"},
    )
