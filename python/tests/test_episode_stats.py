"""The episode statistics a vector env reports: only where a game ended."""

import numpy as np

from spider_env.envs import SpiderVectorEnv


def test_episode_won_only_where_the_game_ended() -> None:
    # The server's episode_* entries of games that did not end this step
    # are stale (the slot's previous episode): a game that won its last
    # episode must not show won=True while its new one goes on.
    r = {
        "episode_return": np.array([5.0, 7.0], np.float32),
        "episode_length": np.array([100, 120], np.int32),
        "episode_won": np.array([True, False]),
        "episode_runs": np.array([8, 3], np.uint8),
    }
    ep = SpiderVectorEnv._episode(r, np.array([False, True]))  # type: ignore[arg-type]
    assert ep["won"].tolist() == [False, False]
    assert ep["r"].tolist() == [0.0, 7.0] and ep["l"].tolist() == [0, 120] and ep["runs"].tolist() == [0, 3]
