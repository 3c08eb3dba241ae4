"""Gymnasium's own wrappers and vectorizers over the spider envs, the way
CleanRL-style scripts use them. Needs gymnasium only."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import spider_env
from conftest import masked_sample
from spider_env import SpiderEnv, SpiderVectorEnv


def test_record_episode_statistics_on_spider_env(server):
    env = gym.wrappers.RecordEpisodeStatistics(SpiderEnv(max_steps=30, address=server.address))
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=3)
    episodes, ret, length = 0, 0.0, 0
    for _ in range(500):  # bounded: 3 episodes of at most 30 steps
        a = int(masked_sample(rng, info["action_mask"][None])[0])
        obs, reward, terminated, truncated, info = env.step(a)
        ret += float(reward)
        length += 1
        if terminated or truncated:
            ep, sp = info["episode"], info["spider_episode"]
            assert int(ep["l"]) == length == sp["l"]
            assert float(ep["r"]) == pytest.approx(ret) == sp["r"]
            assert sp["r"] == info["score"] - 500  # no shaping: the return is the score's change
            assert info["action_mask"].all() and info["num_legal"] == 0  # the ended episode's mask
            episodes += 1
            if episodes == 3:
                break
            obs, info = env.reset()
            ret, length = 0.0, 0
    assert episodes == 3
    assert len(env.return_queue) == 3 and len(env.length_queue) == 3
    env.close()


def test_vector_record_episode_statistics_on_spider_vector_env(server):
    envs = gym.wrappers.vector.RecordEpisodeStatistics(SpiderVectorEnv(4, max_steps=20, address=server.address))
    rng = np.random.default_rng(1)
    obs, infos = envs.reset(seed=11)
    returns = np.zeros(4)
    ended = 0
    for _ in range(100):
        obs, rewards, terminated, truncated, infos = envs.step(masked_sample(rng, infos["action_mask"]))
        returns += rewards
        done = terminated | truncated
        if done.any():
            assert (infos["_episode"] == done).all() and (infos["_spider_episode"] == done).all()
            for i in np.flatnonzero(done):
                assert infos["episode"]["l"][i] == infos["spider_episode"]["l"][i]
                assert infos["episode"]["r"][i] == pytest.approx(infos["spider_episode"]["r"][i])
                assert infos["episode"]["r"][i] == pytest.approx(returns[i])
            ended += int(done.sum())
        returns[done] = 0.0  # next-step: the next step resets these games with reward 0
    assert ended >= 16  # 100 steps of 20-step episodes on 4 games
    assert envs.episode_count == ended
    envs.close()


def test_cleanrl_sync_vector_env_masked_sampling(server):
    """CleanRL's pattern: SyncVectorEnv of make_env thunks with
    RecordEpisodeStatistics inside, a sampler reading info["action_mask"]."""

    def make_env(i: int):
        def thunk() -> gym.Env:
            env = gym.make("Spider-v0", max_steps=50, address=server.address)
            return gym.wrappers.RecordEpisodeStatistics(env)

        return thunk

    envs = gym.vector.SyncVectorEnv([make_env(i) for i in range(4)])
    assert isinstance(envs.single_action_space, gym.spaces.Discrete)
    rng = np.random.default_rng(2)
    obs, infos = envs.reset(seed=5)
    episodes = 0
    for _ in range(3000):
        masks = infos["action_mask"]
        assert masks.shape == (4, spider_env.NUM_ACTIONS)
        assert masks.any(axis=1).all(), "an empty mask row"
        obs, rewards, terminated, truncated, infos = envs.step(masked_sample(rng, masks))
        assert not infos["illegal"].any()
        assert obs.shape == (4, *envs.single_observation_space.shape)
        done = terminated | truncated
        if done.any():
            assert (infos["_episode"] == done).all()
            assert (infos["episode"]["l"][done] == infos["spider_episode"]["l"][done]).all()
            episodes += int(done.sum())
    assert episodes >= 4 * (3000 // 51)  # at most 50 steps and the resetting step per episode
    envs.close()


def test_make_vec_sync_deals_like_spider_vector_env(server):
    sync = gym.make_vec("Spider-v0", num_envs=4, vectorization_mode="sync", address=server.address)
    batch = SpiderVectorEnv(4, address=server.address)
    entry = gym.make_vec("Spider-v0", num_envs=4, vectorization_mode="vector_entry_point", address=server.address)
    o_sync, i_sync = sync.reset(seed=7)
    o_batch, i_batch = batch.reset(seed=7)
    o_entry, _ = entry.reset(seed=7)
    np.testing.assert_array_equal(o_sync, o_batch)
    np.testing.assert_array_equal(o_entry, o_batch)
    np.testing.assert_array_equal(i_sync["action_mask"], i_batch["action_mask"])
    rng = np.random.default_rng(3)
    for _ in range(40):  # the same actions keep them equal (both autoreset next-step)
        a = masked_sample(rng, i_batch["action_mask"])
        o_sync, r_sync, t_sync, u_sync, i_sync = sync.step(a)
        o_batch, r_batch, t_batch, u_batch, i_batch = batch.step(a)
        np.testing.assert_array_equal(o_sync, o_batch)
        np.testing.assert_array_equal(r_sync, r_batch)
        np.testing.assert_array_equal(t_sync | u_sync, t_batch | u_batch)
    for e in (sync, batch, entry):
        e.close()
