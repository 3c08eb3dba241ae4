"""SpiderVectorEnv: long random masked rollouts in every autoreset mode,
gymnasium's vector conventions, and make_vec."""

from __future__ import annotations

import select

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from conftest import masked_random
from spider_env import SpiderEnv, SpiderError, SpiderVectorEnv

N = 16
STEPS = 3000
START = 500  # every game starts at this score


def _check_common(venv, obs, rewards, term, trunc, infos):
    n = venv.num_envs
    assert obs.shape == (n, venv.single_observation_space.shape[0])
    assert obs.dtype == venv.single_observation_space.dtype
    assert obs in venv.observation_space
    assert rewards.dtype == np.float32 and rewards.shape == (n,)
    assert term.dtype == np.bool_ and term.shape == (n,)
    assert trunc.dtype == np.bool_ and trunc.shape == (n,)
    assert not (term & trunc).any()
    m = infos["action_mask"]
    assert m.dtype == np.int8 and m.shape == (n, 1081)
    assert ((m == 0) | (m == 1)).all()
    assert infos["_action_mask"].all() and infos["_action_mask"].shape == (n,)
    ended_rows = (venv.autoreset_mode == AutoresetMode.NEXT_STEP) & (term | trunc)
    # Under next-step a game that just ended has an all-ones row (its next
    # action is ignored) but no legal move.
    assert (m[ended_rows] == 1).all() and (infos["num_legal"][ended_rows] == 0).all()
    assert (m.sum(axis=1)[~ended_rows] == infos["num_legal"][~ended_rows]).all()
    assert (venv.action_masks() == m.astype(bool)).all() and venv.action_masks().dtype == np.bool_
    dtypes = {"score": np.int32, "runs": np.uint8, "moves": np.int32, "num_legal": np.int32, "illegal": np.bool_}
    for key, dt in dtypes.items():
        assert infos[key].dtype == dt and infos[key].shape == (n,) and infos["_" + key].all(), key
    assert not infos["illegal"].any()  # masked actions are always legal
    assert (infos["score"] >= 0).all()


@pytest.mark.parametrize("mode", ["next-step", "same-step", "disabled"])
@pytest.mark.parametrize("rules", ["classic", "cardems"])
def test_random_rollout(server, mode, rules):
    steps = STEPS if rules == "classic" else STEPS // 3
    venv = SpiderVectorEnv(
        N,
        rules=rules,
        suits=2 if rules == "cardems" else 1,
        max_steps=200,
        autoreset_mode=mode,
        address=server,
        mask="bits" if mode == "same-step" else "bytes",
    )
    rng = np.random.default_rng(123)
    assert venv.metadata["autoreset_mode"] == AutoresetMode(
        {"next-step": "NextStep", "same-step": "SameStep", "disabled": "Disabled"}[mode]
    )
    try:
        obs, infos = venv.reset(seed=2024)
        assert (infos["score"] == START).all() and (infos["moves"] == 0).all()
        ret = np.zeros(N, np.float64)  # the running return of each game's episode
        length = np.zeros(N, np.int64)
        prev_done = np.zeros(N, bool)
        episodes = terminations = 0
        for t in range(steps):
            prev_obs = obs
            actions = masked_random(rng, infos["action_mask"])
            obs, rewards, term, trunc, infos = venv.step(actions)
            _check_common(venv, obs, rewards, term, trunc, infos)
            done = term | trunc

            if mode == "next-step":
                # The step after an end restarts the game: reward 0, not
                # ended, the new game's first observation.
                p = prev_done
                assert (rewards[p] == 0).all() and not done[p].any()
                assert (infos["score"][p] == START).all() and (infos["moves"][p] == 0).all()
                assert not (obs[p] == prev_obs[p]).all(axis=1).any()
                live = ~p
            else:
                live = np.ones(N, bool)
            ret[live] += rewards[live]
            length[live] += 1
            assert (infos["moves"][live & ~done] == length[live & ~done]).all()

            if done.any():
                # Under same-step the ended episodes' infos are in
                # final_info, as SyncVectorEnv puts them.
                ended = infos["final_info"] if mode == "same-step" else infos
                assert ("spider_episode" in infos) == (mode != "same-step")
                ep = ended["spider_episode"]
                assert (ended["_spider_episode"] == done).all() and "episode" not in infos
                # Each key with its mask, as SyncVectorEnv nests a dict.
                assert set(ep) == {"r", "l", "won", "runs", "_r", "_l", "_won", "_runs"}
                assert all((ep["_" + k] == done).all() for k in ("r", "l", "won", "runs"))
                if mode == "same-step":
                    fi = infos["final_info"]
                    assert (infos["_final_obs"] == done).all() and (infos["_final_info"] == done).all()
                    assert (fi["_score"] == done).all() and (fi["_spider_episode"] == done).all()
                    end_score, end_runs = fi["score"], fi["runs"]
                    for i in range(N):
                        if done[i]:
                            f = infos["final_obs"][i]
                            assert f.shape == obs[i].shape and f.dtype == obs.dtype
                            assert not (f == obs[i]).all()
                        else:
                            assert infos["final_obs"][i] is None
                    # The new game is already in place.
                    assert (infos["score"][done] == START).all() and (infos["moves"][done] == 0).all()
                    assert (fi["moves"][done] == length[done]).all()
                else:
                    assert "final_obs" not in infos and "final_info" not in infos
                    end_score, end_runs = infos["score"], infos["runs"]
                    assert (infos["moves"][done] == length[done]).all()
                for i in np.flatnonzero(done):
                    # Rewards add up to the score's change over the episode.
                    assert ret[i] == end_score[i] - START == ep["r"][i], (t, i)
                    assert ep["l"][i] == length[i] and ep["runs"][i] == end_runs[i]
                    assert bool(ep["won"][i]) == (end_runs[i] == 8)
                    assert trunc[i] == (length[i] == 200 and not term[i])
                assert (ep["r"][~done] == 0).all() and (ep["l"][~done] == 0).all()
                episodes += int(done.sum())
                terminations += int(term.sum())
                ret[done] = 0
                length[done] = 0
            else:
                assert "spider_episode" not in infos and "final_obs" not in infos

            if mode == "next-step":
                # Any action is accepted, and ignored; no move is legal.
                assert (infos["action_mask"][done] == 1).all() and (infos["num_legal"][done] == 0).all()
                if done.any():
                    with pytest.raises(SpiderError, match="has ended") as e:
                        venv.hint(int(np.flatnonzero(done)[0]))
                    assert e.value.code == "episode_over"
            elif mode == "disabled" and done.any():
                assert (infos["num_legal"][done] == 0).all()
                if t % 2 == 0:
                    # As a SyncVectorEnv of SpiderEnv games raises it (the
                    # server's episode_over is its cause); so does a hint.
                    with pytest.raises(gym.error.ResetNeeded, match="has ended") as e:
                        venv.step(np.zeros(N, np.int64))
                    assert isinstance(e.value.__cause__, SpiderError) and e.value.__cause__.code == "episode_over"
                    with pytest.raises(gym.error.ResetNeeded, match="has ended") as e:
                        venv.hint(int(np.flatnonzero(done)[0]))
                    assert isinstance(e.value.__cause__, SpiderError) and e.value.__cause__.code == "episode_over"
                before = obs.copy()
                obs, rinfos = venv.reset(options={"reset_mask": done})
                assert (obs[~done] == before[~done]).all()
                assert (rinfos["score"][done] == START).all() and (rinfos["moves"][done] == 0).all()
                assert (rinfos["action_mask"].sum(1) == rinfos["num_legal"]).all()
                assert (rinfos["num_legal"][done] > 0).all()
                infos = rinfos
            prev_done = done
        assert episodes >= N * (steps // 200 - 1)
    finally:
        venv.close()


def _episode_starts(mode, n=4, steps=700, max_steps=60, seed=77, rng_seed=0):
    """The first observation of each (game, episode) in a rollout."""
    venv = SpiderVectorEnv(n, max_steps=max_steps, autoreset_mode=mode)
    rng = np.random.default_rng(rng_seed)
    starts = {}
    try:
        obs, infos = venv.reset(seed=seed)
        k = np.zeros(n, int)
        for i in range(n):
            starts[i, 0] = obs[i].copy()
        prev_done = np.zeros(n, bool)
        for _ in range(steps):
            obs, r, term, trunc, infos = venv.step(masked_random(rng, infos["action_mask"]))
            done = term | trunc
            if mode == "next-step":
                for i in np.flatnonzero(prev_done):
                    starts[i, k[i]] = obs[i].copy()
                k[done] += 1
            elif mode == "same-step":
                k[done] += 1
                for i in np.flatnonzero(done):
                    starts[i, k[i]] = obs[i].copy()
            elif done.any():
                k[done] += 1
                obs, infos = venv.reset(options={"reset_mask": done})
                for i in np.flatnonzero(done):
                    starts[i, k[i]] = obs[i].copy()
            prev_done = done
    finally:
        venv.close()
        assert venv.server.proc.poll() is not None
    return starts


def test_modes_deal_the_same_games():
    """Game i's k-th deal depends only on (seed, i, k): the three modes (with
    different random play) and the single env see the same deals."""
    by_mode = {m: _episode_starts(m, rng_seed=j) for j, m in enumerate(["next-step", "same-step", "disabled"])}
    common = set.intersection(*(set(s) for s in by_mode.values()))
    assert len(common) >= 4 * 5
    for key in common:
        a = by_mode["next-step"][key]
        assert (a == by_mode["same-step"][key]).all() and (a == by_mode["disabled"][key]).all(), key
    env = SpiderEnv()
    try:
        o, _ = env.reset(seed=77)
        k = 0
        while (0, k) in common:
            assert (o == by_mode["same-step"][0, k]).all()
            o, _ = env.reset()
            k += 1
        assert k >= 5
    finally:
        env.close()


def test_vector_reset_rules(server):
    venv = SpiderVectorEnv(3, address=server, autoreset_mode=AutoresetMode.DISABLED)
    try:
        with pytest.raises(SpiderError) as e:  # reset_mask before any seeded reset
            venv.reset(options={"reset_mask": np.array([True, False, True])})
        assert e.value.code == "bad_order"
        before = venv.np_random_seed
        with pytest.raises(SpiderError) as e:  # refused before np_random changes
            venv.reset(seed=5, options={"reset_mask": np.array([True, False, True])})
        assert e.value.code == "bad_order" and venv.np_random_seed == before != 5
        o1, _ = venv.reset(seed=5)
        o2, _ = venv.reset(seed=5)
        assert (o1 == o2).all() and not (o1[0] == o1[1]).all()
        assert (venv.reset(seed=np.int64(5))[0] == o1).all()
        o3, _ = venv.reset()
        assert not (o3 == o1).all(axis=1).any()  # every game's next deal
        with pytest.raises(ValueError):
            venv.reset(options={"reset_mask": np.ones(4, bool)})
        with pytest.raises(ValueError):
            venv.reset(options={"reset_mask": np.ones(3, np.uint8)})
        with pytest.raises(ValueError):
            venv.reset(seed=[1, 2])  # one seed per game
        with pytest.raises(ValueError):
            venv.reset(seed=[1, 2], options={"reset_mask": np.ones(3, bool)})
        with pytest.raises(ValueError):
            venv.reset(options={"seed": 1})
        o4, _ = venv.reset(seed=[None, None, None])
        assert o4.shape == (3, 806)
        # With a mask, as in Gymnasium, what games outside it would get is not read.
        first = np.array([True, False, False])
        o5, _ = venv.reset(seed=2**64 - 1, options={"reset_mask": first})
        assert (o5[1:] == o4[1:]).all() and not (o5[0] == o4[0]).all()
        with pytest.raises(ValueError):
            venv.reset(seed=2**64 - 2, options={"reset_mask": np.array([False, False, True])})
        o6, _ = venv.reset(seed=[3, -1, "x"], options={"reset_mask": first})
        assert (o6[0] == venv.reset(seed=[3, None, None], options={"reset_mask": first})[0][0]).all()
        with pytest.raises(ValueError):
            venv.reset(seed=[3, -1, None], options={"reset_mask": np.array([True, True, False])})
        # An all-false mask resets no game (Gymnasium raises instead).
        o7, _ = venv.reset(options={"reset_mask": np.zeros(3, bool)})
        assert (o7 == o6).all()
        with pytest.raises(ValueError, match=r"shape \(2,\); want \(3,\)"):
            venv.step(np.zeros(2, np.int64))
        # Only (num_envs,) integer ids: no silent flattening or truncation.
        first = venv.action_masks().argmax(1)
        for shape in ((3, 1), (1, 3)):
            with pytest.raises(ValueError, match="shape"):
                venv.step(first.reshape(shape))
        with pytest.raises(TypeError):
            venv.step(first.astype(np.float64))
        with pytest.raises(TypeError):
            venv.step(np.ones(3, bool))
        with pytest.raises(ValueError, match="outside the action space"):
            venv.step(np.array([0, 1081, 0]))
        _, _, _, _, info = venv.step(first.astype(np.uint16))
        assert (info["moves"] == 1).all()
    finally:
        venv.close()
    with pytest.raises(ValueError):
        SpiderVectorEnv(2, address=server, autoreset_mode="sometimes")


def test_vector_spaces_and_render(server):
    venv = SpiderVectorEnv(5, address=server, obs="float32", render_mode="ansi")
    try:
        assert venv.num_envs == 5
        assert venv.single_action_space == gym.spaces.Discrete(1081)
        assert venv.action_space == gym.spaces.MultiDiscrete([1081] * 5)
        assert venv.single_observation_space.dtype == np.float32
        assert venv.observation_space.shape == (5, *venv.single_observation_space.shape)
        assert venv.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
        obs, infos = venv.reset(seed=1)
        assert obs in venv.observation_space
        frames = venv.render()
        assert isinstance(frames, tuple) and len(frames) == 5 and all("score 500" in f for f in frames)
        sample = venv.action_space.sample()
        obs, r, term, trunc, infos = venv.step(sample)  # unmasked: illegal ones are no-ops
        assert infos["illegal"].dtype == np.bool_ and (infos["moves"] == 1).all()
    finally:
        venv.close()
    venv.close()
    with pytest.raises(SpiderError):
        venv.client.step([0] * 5)


def test_make_vec():
    venv = gym.make_vec(
        "Spider-v0",
        num_envs=6,
        vectorization_mode="vector_entry_point",
        rules="cardems",
        suits=1,
        autoreset_mode="same-step",
    )
    try:
        assert isinstance(venv, SpiderVectorEnv) and venv.num_envs == 6
        assert venv.spider_spec["n"] == 6 and venv.spider_spec["rules"] == "cardems"
        assert venv.spider_spec["autoreset"] == "same-step"
        assert venv.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
        assert venv.spec.id == "Spider-v0" and venv.spec.kwargs["num_envs"] == 6
        obs, infos = venv.reset(seed=3)
        assert obs.shape == (6, 806)
        venv.step(venv.action_masks().argmax(1))
    finally:
        venv.close()
    assert venv.server.proc.poll() is not None
    # The default vectorization of this id is its vector entry point.
    venv = gym.make_vec("Spider-v0", num_envs=2)
    try:
        assert isinstance(venv, SpiderVectorEnv)
    finally:
        venv.close()
    # The sync vectorizer over single envs works too.
    venv = gym.make_vec("Spider-v0", num_envs=2, vectorization_mode="sync", max_steps=5)
    try:
        obs, infos = venv.reset(seed=0)
        assert obs.shape == (2, 806) and infos["action_mask"].shape == (2, 1081)
        for _ in range(6):
            obs, r, term, trunc, infos = venv.step(np.argmax(infos["action_mask"], axis=1))
    finally:
        venv.close()


def test_record_episode_statistics_wrapper(server):
    """gymnasium's own statistics wrapper needs the episode key free, and it
    is by default."""
    venv = SpiderVectorEnv(4, address=server, max_steps=10)
    venv = gym.wrappers.vector.RecordEpisodeStatistics(venv)
    try:
        obs, infos = venv.reset(seed=0)
        for _ in range(10):
            obs, r, term, trunc, infos = venv.step(venv.unwrapped.action_masks().argmax(1))
        assert trunc.all() and (infos["episode"]["l"] == 10).all()
    finally:
        venv.close()


def test_seeds_follow_gymnasium(server):
    """reset(seed=s) deals game i what SpiderEnv.reset(seed=s+i) deals, and
    what gymnasium's own sync vectorizer deals; a list seeds each game, None
    taking a game to its next episode, as SpiderEnv.reset() would."""
    n, s = 4, 7
    venv = SpiderVectorEnv(n, address=server)
    singles = [SpiderEnv(address=server) for _ in range(n)]
    sync = gym.make_vec("Spider-v0", num_envs=n, vectorization_mode="sync", vector_kwargs={"copy": True})
    try:
        obs, _ = venv.reset(seed=s)
        want = np.stack([e.reset(seed=s + i)[0] for i, e in enumerate(singles)])
        assert (obs == want).all() and not (obs[0] == obs[1]).all()
        sync_obs, _ = sync.reset(seed=s)
        assert (sync_obs == obs).all()
        # Later episodes: a list with None takes those games on, as reset() does.
        obs, _ = venv.reset(seed=[None, 100, None, 3])
        want = np.stack(
            [
                singles[0].reset()[0],
                singles[1].reset(seed=100)[0],
                singles[2].reset()[0],
                singles[3].reset(seed=3)[0],
            ]
        )
        assert (obs == want).all()
        # Any sequence of seeds, or an integer array, as the annotation says
        # (a range was taken for one seed and refused).
        by_list, _ = venv.reset(seed=[5, 6, 7, 8])
        for seeds in (range(5, 9), np.arange(5, 9), (5, 6, 7, 8)):
            again, _ = venv.reset(seed=seeds)
            assert (again == by_list).all(), seeds
        # Sequences of characters or bytes are not seeds (bytes index as ints).
        for bad in ("abcd", b"\x05\x06\x07\x08", bytearray(4), memoryview(b"1234")):
            with pytest.raises(TypeError, match="a seed must be an integer"):
                venv.reset(seed=bad)
    finally:
        venv.close()
        sync.close()
        for e in singles:
            e.close()


def test_first_reset_deals_unseeded_games_at_random(server):
    """On a first reset with a list of seeds, a None game is dealt at random,
    as in gymnasium's sync vectorizer, not from the generator the list's
    other seeds set: two fresh vector envs deal it differently, and alike
    only when their own generators were seeded alike."""
    envs = [SpiderVectorEnv(3, address=server) for _ in range(4)]
    try:
        obs = [e.reset(seed=[None, 5, None])[0] for e in envs[:2]]
        assert (obs[0][1] == obs[1][1]).all()
        assert not (obs[0][0] == obs[1][0]).all() and not (obs[0][2] == obs[1][2]).all()
        for e in envs[2:]:
            e.np_random = np.random.default_rng(11)
        obs = [e.reset(seed=[None, 5, None])[0] for e in envs[2:]]
        assert (obs[0] == obs[1]).all()
    finally:
        for e in envs:
            e.close()


def test_masked_seeded_reset_follows_gymnasium(server):
    """reset with a seed and options["reset_mask"] resets the chosen games
    as gymnasium's sync vectorizer does (game i from seed + i, or its own
    seed from a list, None going on to its next episode) and leaves the
    others, here in the middle of their games."""
    n = 4
    venv = SpiderVectorEnv(n, address=server, autoreset_mode=AutoresetMode.DISABLED)
    sync = gym.make_vec(
        "Spider-v0",
        num_envs=n,
        vectorization_mode="sync",
        vector_kwargs={"copy": True, "autoreset_mode": AutoresetMode.DISABLED},
    )
    rng = np.random.default_rng(5)
    try:
        obs, infos = venv.reset(seed=3)
        assert (sync.reset(seed=3)[0] == obs).all()
        for _ in range(4):
            actions = masked_random(rng, infos["action_mask"])
            obs, *_, infos = venv.step(actions)
            assert (sync.step(actions)[0] == obs).all()
        for seed, mask in [
            (20, [True, False, True, False]),
            ([None, 7, 8, None], [True, True, False, False]),
            ([1, None, None, 2], [False, True, True, False]),
        ]:
            before = obs.copy()
            mask = np.array(mask)
            obs, infos = venv.reset(seed=seed, options={"reset_mask": mask})
            sync_obs, _ = sync.reset(seed=seed, options={"reset_mask": mask.copy()})
            assert (sync_obs == obs).all(), (seed, mask)
            assert (obs[~mask] == before[~mask]).all() and not (obs[mask] == before[mask]).all(axis=1).any()
            actions = masked_random(rng, infos["action_mask"])
            obs, *_, infos = venv.step(actions)
            assert (sync.step(actions)[0] == obs).all()
        # Game 0 went on from seed 20's stream, game 2 from seed 22's.
        obs, _ = venv.reset(options={"reset_mask": np.ones(n, bool)})
        assert (sync.reset(options={"reset_mask": np.ones(n, bool)})[0] == obs).all()
    finally:
        venv.close()
        sync.close()


def test_legal_lists_are_each_rows_legal_ids():
    """The client's lists (the socket path's) against numpy's per-row scan,
    rows with no legal action and with every action among them."""
    from spider_env.envs import _legal_lists

    rng = np.random.default_rng(8)
    masks = (rng.random((50, 1081)) < 0.02).astype(np.uint8)
    masks[3] = 0
    masks[7] = 1
    masks[9, [0, 1080]] = 1
    lists = _legal_lists(masks)
    assert lists.dtype == np.int16 and lists.shape == masks.shape
    for row in range(masks.shape[0]):
        ids = np.flatnonzero(masks[row])
        assert list(lists[row, : ids.size]) == list(ids), row
    assert list(lists[7]) == list(range(1081))


def test_legal_actions_info(server):
    """legal_actions over the socket: row i's first num_legal ids are its
    mask's legal actions; a uniform pick among them is legal."""
    env = SpiderVectorEnv(6, address=server, shm=False, legal_actions=True, max_steps=40)
    try:
        _, info = env.reset(seed=2)
        rng = np.random.default_rng(1)
        for _ in range(120):
            legal, count = info["legal_actions"], info["num_legal"]
            masks = info["action_mask"].astype(bool)
            for i in range(env.num_envs):
                if count[i]:
                    assert list(legal[i, : count[i]]) == list(np.flatnonzero(masks[i])), i
            pick = legal[np.arange(env.num_envs), (rng.random(env.num_envs) * count).astype(np.int64)]
            live = np.flatnonzero(count > 0)
            assert live.size and masks[live, pick[live]].all()
            _, _, _, _, info = env.step(pick)
    finally:
        env.close()


def test_same_step_illegal_flag_belongs_to_the_ended_episode(server):
    """Under same-step autoreset the top-level infos describe the new
    episode, as gymnasium's SyncVectorEnv does: a game ended by an illegal
    action (illegal="lose") shows it in final_info only."""
    venv = SpiderVectorEnv(2, autoreset_mode="same-step", illegal="lose", address=server)
    try:
        _, infos = venv.reset(seed=5)
        masks = infos["action_mask"]
        actions = np.array([int(np.argmin(masks[0])), int(np.argmax(masks[1]))])
        assert masks[0][actions[0]] == 0 and masks[1][actions[1]] == 1
        _, _, term, _, infos = venv.step(actions)
        assert term[0] and not term[1]
        assert infos["final_info"]["illegal"][0] and infos["final_info"]["_illegal"][0]
        assert not infos["illegal"].any()
        assert infos["moves"][0] == 0 and infos["score"][0] == START  # the new game
    finally:
        venv.close()


def test_recv_action_masks_are_owned():
    """With copy=True (the default) and shared memory, the masks
    action_masks returns after recv are the env's own, as after step: a
    later step does not overwrite them."""
    venv = SpiderVectorEnv(4)
    try:
        assert venv.client.shared and venv.copy
        _, infos = venv.reset(seed=0)
        rng = np.random.default_rng(1)
        venv.send(masked_random(rng, infos["action_mask"][:2]), np.arange(2))
        venv.recv()
        masks = venv.action_masks()
        before = masks.copy()
        for _ in range(5):
            venv.step(masked_random(rng, venv.action_masks().view(np.int8)))
        assert not np.array_equal(venv.action_masks(), before)  # the games moved on
        assert np.array_equal(masks, before)
    finally:
        venv.close()


@pytest.mark.parametrize("shm", [True, False])
def test_recv_rows_follow_env_ids(server, shm):
    """recv's rows are the games of send's env_ids, in that order, as a
    step of every game returns them: also an order whose ends are the
    lowest and highest game, which spans a run of games out of order."""
    ids = np.array([0, 2, 1, 3])
    venv = SpiderVectorEnv(4, address=server, shm=shm)
    twin = SpiderVectorEnv(4, address=server, shm=shm)
    try:
        _, infos = venv.reset(seed=21)
        twin.reset(seed=21)
        actions = masked_random(np.random.default_rng(2), infos["action_mask"].view(np.uint8))
        venv.send(actions[ids], ids)
        obs, rewards, term, trunc, got = venv.recv()
        all_obs, all_rewards, all_term, all_trunc, want = twin.step(actions)
        assert not np.array_equal(all_obs[1], all_obs[2])  # the two games swapped differ
        assert list(got["env_id"]) == list(ids)
        assert np.array_equal(obs, all_obs[ids])
        assert np.array_equal(rewards, all_rewards[ids])
        assert np.array_equal(term, all_term[ids]) and np.array_equal(trunc, all_trunc[ids])
        for key in ("action_mask", "score", "moves", "num_legal"):
            assert np.array_equal(got[key], want[key][ids]), key
        assert np.array_equal(venv.action_masks(), twin.action_masks())
    finally:
        venv.close()
        twin.close()


def test_action_masks_while_a_send_is_in_flight():
    """With shared memory and copy=True, action_masks between a send and
    its recv are the masks of the last results returned, not what the
    server is writing for the step in flight."""
    venv = SpiderVectorEnv(4)
    try:
        assert venv.client.shared and venv.copy
        _, infos = venv.reset(seed=0)
        rng = np.random.default_rng(4)
        venv.send(masked_random(rng, infos["action_mask"]), np.arange(4))
        venv.recv()
        venv.send(masked_random(rng, infos["action_mask"][:2]), np.arange(2))
        *_, infos = venv.recv()
        before = infos["action_mask"].astype(bool)
        assert np.array_equal(venv.action_masks()[:2], before)
        moved = venv.action_masks()
        venv.send(masked_random(rng, moved.view(np.int8)), np.arange(4))
        # The reply is readable once the server has played the step and
        # written its results into the shared memory.
        sock = venv.client._sock
        assert sock is not None and select.select([sock], [], [], 30)[0]
        assert np.array_equal(venv.action_masks(), moved)
        venv.recv()
        assert not np.array_equal(venv.action_masks(), moved)  # the games moved on
    finally:
        venv.close()


def test_same_step_infos_are_sync_vector_envs(server):
    """Under same-step autoreset the infos have SyncVectorEnv's layout of
    SpiderEnv games: the same keys at the top (the new episodes'; and
    EnvPool's env_id) and in final_info (the ended ones'), with the same
    values."""
    kwargs = {"suits": 4, "max_steps": 2, "address": server}
    venv = SpiderVectorEnv(3, autoreset_mode="same-step", **kwargs)
    sync = gym.vector.SyncVectorEnv(
        [lambda: SpiderEnv(**kwargs) for _ in range(3)], autoreset_mode=AutoresetMode.SAME_STEP
    )
    try:
        _, a = venv.reset(seed=2)
        _, b = sync.reset(seed=2)
        ended = 0
        for _ in range(6):
            actions = a["action_mask"].view(bool).argmax(axis=1)
            _, ra, ta, ua, a = venv.step(actions)
            _, rb, tb, ub, b = sync.step(actions)
            assert (ra == rb).all() and (ta == tb).all() and (ua == ub).all()
            assert sorted(a) == sorted([*b, "env_id", "_env_id"]), "top-level keys (and EnvPool's)"
            if "final_info" in b:
                ended += 1
                fa, fb = a["final_info"], b["final_info"]
                assert sorted(fa) == sorted(fb), "final_info keys"
                done = fb["_score"]
                for key in ("action_mask", "score", "runs", "moves", "num_legal", "illegal"):
                    assert (fa[key][done] == fb[key][done]).all(), key
                ea, eb = fa["spider_episode"], fb["spider_episode"]
                assert sorted(ea) == sorted(eb), "spider_episode keys"
                for key in eb:
                    assert (ea[key][done] == eb[key][done]).all(), key
                    if key.startswith("_"):
                        assert (ea[key] == eb[key]).all(), key
        assert ended >= 2
    finally:
        venv.close()
        sync.close()


def test_next_step_episode_stats_are_sync_vector_envs(server):
    """Under next-step autoreset the ended episodes' statistics have
    SyncVectorEnv's layout of SpiderEnv games: the same keys, each with its
    ``_key`` mask, and the same values."""
    kwargs = {"suits": 4, "max_steps": 2, "address": server}
    venv = SpiderVectorEnv(3, **kwargs)
    sync = gym.vector.SyncVectorEnv([lambda: SpiderEnv(**kwargs) for _ in range(3)])
    try:
        _, a = venv.reset(seed=5)
        sync.reset(seed=5)
        ended = 0
        for _ in range(6):
            actions = venv.action_masks().argmax(axis=1)
            _, ra, ta, ua, a = venv.step(actions)
            _, rb, tb, ub, b = sync.step(actions)
            assert (ra == rb).all() and (ta == tb).all() and (ua == ub).all()
            assert ("spider_episode" in a) == ("spider_episode" in b)
            if "spider_episode" in b:
                ended += 1
                assert (a["_spider_episode"] == b["_spider_episode"]).all()
                ea, eb = a["spider_episode"], b["spider_episode"]
                assert sorted(ea) == sorted(eb), "spider_episode keys"
                for key in eb:
                    assert (ea[key] == eb[key]).all(), key
        assert ended >= 2
    finally:
        venv.close()
        sync.close()


def test_make_vec_takes_max_episode_steps(server):
    """gymnasium.make_vec passes max_episode_steps to the vector entry
    point: it is the step limit. Before, it was an unknown game option."""
    envs = gym.make_vec(
        "Spider-v0", num_envs=2, vectorization_mode="vector_entry_point", max_episode_steps=3, address=server
    )
    try:
        assert envs.unwrapped.config.max_steps == 3
        envs.reset(seed=0)
        for _ in range(3):
            _, _, term, trunc, _ = envs.step(_first_legal(envs))
        assert (trunc | term).all()
    finally:
        envs.close()
    with pytest.raises(ValueError, match="max_episode_steps=3 and max_steps=5 disagree"):
        SpiderVectorEnv(2, max_episode_steps=3, max_steps=5, address=server)
    both = SpiderVectorEnv(1, max_episode_steps=4, max_steps=4, address=server)
    assert both.config.max_steps == 4
    both.close()


def _first_legal(envs: gym.vector.VectorEnv) -> np.ndarray:
    """Every game's first legal action now."""
    return envs.unwrapped.action_masks().argmax(axis=1)


def test_async_reset_runs_envpools_loop(server):
    """EnvPool's loop runs as it is: async_reset, then recv and send in
    turn; the first recv holds every game's reset."""
    venv = SpiderVectorEnv(4, address=server)
    try:
        venv.async_reset(seed=3)
        with pytest.raises(RuntimeError, match="async_reset's results are waiting"):
            venv.send(np.zeros(4, np.int64))
        with pytest.raises(RuntimeError, match="async_reset's results are waiting"):
            venv.step(np.zeros(4, np.int64))
        obs, rew, term, trunc, infos = venv.recv()
        other = SpiderVectorEnv(4, address=server)
        first, _ = other.reset(seed=3)
        other.close()
        assert (obs == first).all() and (infos["env_id"] == np.arange(4)).all()
        assert (rew == 0).all() and not term.any() and not trunc.any()
        for _ in range(5):
            ids = infos["env_id"]
            venv.send(infos["action_mask"].view(bool).argmax(axis=1), ids)
            obs, rew, term, trunc, infos = venv.recv()
            assert (infos["moves"] >= 1).all()
        # A reset drops results async_reset left waiting.
        venv.async_reset(seed=3)
        venv.reset(seed=3)
        venv.step(venv.action_masks().argmax(axis=1))
    finally:
        venv.close()


def test_step_with_env_id_is_envpools(server):
    """step(action, env_id), EnvPool's synchronous form, steps those games
    only: what send then recv give, rows in env_id's order."""
    a = SpiderVectorEnv(3, address=server)
    b = SpiderVectorEnv(3, address=server)
    try:
        a.reset(seed=11)
        b.reset(seed=11)
        for ids in ([2, 0], [1], 1):
            rows = np.atleast_1d(ids)
            acts = a.action_masks()[rows].argmax(axis=1)
            got = a.step(acts if np.ndim(ids) else acts[0], ids)
            b.send(acts, rows)
            want = b.recv()
            for x, y in zip(got[:4], want[:4], strict=True):
                np.testing.assert_array_equal(x, y)
            assert got[4]["env_id"].tolist() == rows.tolist()
            np.testing.assert_array_equal(a.action_masks(), b.action_masks())
        obs, *_ = a.step(a.action_masks().argmax(axis=1))  # every game, as before
        assert obs.shape[0] == 3
    finally:
        a.close()
        b.close()


def test_envpools_reset_env_id_and_infos(server):
    """EnvPool's forms beside gymnasium's: every infos names its games
    (int32 env_id, after reset and step too, as EnvPool's); reset(env_id)
    resets those games only and returns their rows alone, in that order;
    batch_size other than num_envs (EnvPool's asynchronous mode) is
    refused with why. Before, reset(env_id) was a TypeError, infos of
    reset and step had no env_id, and batch_size an unknown game option."""
    venv = SpiderVectorEnv(4, address=server)
    try:
        first, infos = venv.reset(np.array([3, 1]))  # the first reset deals every game
        assert first.shape[0] == 2 and infos["env_id"].tolist() == [3, 1]
        assert infos["env_id"].dtype == np.int32 and infos["moves"].tolist() == [0, 0]
        obs, infos = venv.reset(seed=5)
        assert infos["env_id"].dtype == np.int32 and infos["env_id"].tolist() == [0, 1, 2, 3]
        for _ in range(3):
            obs, _, _, _, infos = venv.step(venv.action_masks().argmax(axis=1))
        assert infos["env_id"].tolist() == [0, 1, 2, 3] and (infos["moves"] == 3).all()
        got, rows = venv.reset(np.array([2, 0]))
        assert rows["env_id"].tolist() == [2, 0] and rows["moves"].tolist() == [0, 0]
        assert rows["action_mask"].shape == (2, venv.single_action_space.n) and rows["_moves"].shape == (2,)
        # The games reset are on to their next episode; the others untouched.
        other = SpiderVectorEnv(4, address=server)
        other.reset(seed=5)
        want, _ = other.reset(options={"reset_mask": np.array([True, False, True, False])})
        other.close()
        np.testing.assert_array_equal(got, want[[2, 0]])
        obs, _, _, _, infos = venv.step(venv.action_masks().argmax(axis=1))
        assert infos["moves"].tolist() == [1, 4, 1, 4]
        _, _, _, _, infos = venv.step(np.zeros(1, np.int64) + venv.action_masks()[1].argmax(), 1)
        assert infos["env_id"].dtype == np.int32 and infos["env_id"].tolist() == [1]
        with pytest.raises(ValueError, match="takes no seed"):
            venv.reset(np.array([0]), seed=1)
        with pytest.raises(ValueError, match="names a game twice"):
            venv.reset(np.array([0, 0]))
    finally:
        venv.close()
    with pytest.raises(ValueError, match="only EnvPool's synchronous mode"):
        SpiderVectorEnv(4, address=server, batch_size=2)
    SpiderVectorEnv(2, address=server, batch_size=2).close()


def test_infos_convert_to_a_list(server):
    """Gymnasium's DictInfoToList reads every key's "_key" mask: env_id
    has one too, in step's, reset's and recv's infos."""
    venv = gym.wrappers.vector.DictInfoToList(SpiderVectorEnv(3, address=server))
    try:
        _, infos = venv.reset(seed=1)
        assert [i["env_id"] for i in infos] == [0, 1, 2]
        _, _, _, _, infos = venv.step(venv.env.action_masks().argmax(axis=1))
        assert [i["env_id"] for i in infos] == [0, 1, 2] and all(i["moves"] == 1 for i in infos)
        inner = venv.env
        inner.send(inner.action_masks()[[2]].argmax(axis=1), [2])
        *_, infos = inner.recv()
        assert infos["_env_id"].tolist() == [True] and infos["env_id"].tolist() == [2]
    finally:
        venv.close()
