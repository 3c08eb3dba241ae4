"""RLlib PPO with action masking on Spider-v0 through spider_env.rllib, on a
local Ray with 2 env runners (marker rllib: needs ray[rllib] and torch)."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

pytest.importorskip("ray.rllib")
pytest.importorskip("torch")

import ray

pytestmark = [pytest.mark.rllib]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.limit(300)
@pytest.mark.parametrize(
    ("vectorize_mode", "envs_per_runner", "game"),
    [
        ("sync", 1, "config"),  # SpiderEnvs, the game as a SpiderConfig
        ("vector_entry_point", 2, {"suits": 1, "max_steps": 50}),  # one SpiderVectorEnv batch per runner, options
    ],
)
def test_ppo_action_masking_two_env_runners(spider_bin, vectorize_mode, envs_per_runner, game):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    import spider_env.rllib
    from spider_env import SpiderConfig

    if game == "config":
        # Pickled to the runners with the rest of env_config; max_steps beside it laid over it.
        game = {"config": SpiderConfig(suits=1, max_steps=500), "max_steps": 50}

    def server_pid(runner: Any) -> int:  # runs in each env runner (a nested function: pickled by value)
        import spider_env.rllib

        shared = spider_env.rllib._shared
        return -1 if shared is None else shared[1].pid

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"SPIDER_BIN": spider_bin}},
    )
    algo = None
    server_pids: list[int] = []
    try:
        name = spider_env.rllib.register()
        config = (
            PPOConfig()
            .environment(name, env_config=game)
            .env_runners(
                num_env_runners=2,
                num_envs_per_env_runner=envs_per_runner,
                rollout_fragment_length="auto",
                gym_env_vectorize_mode=vectorize_mode,
            )
            .learners(num_learners=0)
            .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
            .rl_module(
                rl_module_spec=RLModuleSpec(
                    module_class=ActionMaskingTorchRLModule,
                    model_config={"fcnet_hiddens": [32], "head_fcnet_hiddens": [32]},
                )
            )
            .callbacks(on_episode_end=spider_env.rllib.log_episode_metrics)
            .debugging(seed=0)
        )
        algo = config.build_algo()
        for _ in range(2):
            runners = algo.train()["env_runners"]
        assert runners["num_env_steps_sampled_lifetime"] >= 400
        assert 0 < runners["episode_len_max"] <= 50  # the step limit reached the runners' games
        spider = runners["spider"]
        episodes = spider["episodes_by_runner"]  # since the start, by runner
        assert set(episodes) == {"1", "2"} and all(v > 0 for v in episodes.values()), episodes
        assert spider["illegal"] == 0  # the masked policy never chose an illegal move
        assert 0.0 <= spider["won"] <= 1.0 and spider["score"] <= 500
        server_pids = list(algo.env_runner_group.foreach_env_runner(server_pid, local_env_runner=False))
        assert len(server_pids) == 2 and len(set(server_pids)) == 2 and -1 not in server_pids  # one server each
    finally:
        if algo is not None:
            algo.stop()
        ray.shutdown()
    deadline = time.monotonic() + 20  # the runners' servers go with them
    while any(_alive(p) for p in server_pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(p) for p in server_pids), f"spider servers left running: {server_pids}"
