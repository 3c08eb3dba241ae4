"""Faults a training script meets: errors crossing processes, Ctrl-C in the
middle of a step, forked workers, seeds that cannot be dealt."""

from __future__ import annotations

import copy
import multiprocessing
import os
import pickle
import time

import gymnasium as gym
import numpy as np
import pytest

from conftest import paused
from spider_env import Client, SpiderEnv, SpiderError, SpiderVectorEnv
from spider_env._client import Client as _Client


def test_spider_error_crosses_processes():
    e = SpiderError("bad_action", "action 5 is not legal")
    e.report = {"policies": [{"policy": "greedy"}]}  # evaluate()'s, with code eval
    for back in (pickle.loads(pickle.dumps(e)), copy.deepcopy(e), copy.copy(e), SpiderError(e)):
        assert type(back) is SpiderError
        assert (back.code, back.message, str(back), back.report) == (e.code, e.message, str(e), e.report)
    one = SpiderError("a message only")
    assert (one.code, one.message) == ("error", "a message only")


def test_an_ended_game_is_told_from_a_bad_action():
    """The server's episode_over, and a server's from before that code (a
    stale binary: bad_action for a step, bad_order for a hint, in its
    words), are an ended game; an illegal action is not."""
    from spider_env.envs import _episode_over

    assert _episode_over(
        SpiderError("episode_over", "env: game 0 has ended; reset it before stepping it (autoreset disabled)")
    )
    assert _episode_over(
        SpiderError("bad_action", "env: game 3 has ended; reset it before stepping it (autoreset disabled)")
    )
    assert _episode_over(SpiderError("bad_order", "game 1 has no legal action (it has ended); reset it"))
    assert not _episode_over(SpiderError("bad_action", "env: game 2: illegal action 5 (id 5)"))
    assert not _episode_over(SpiderError("bad_request", "game 9 has ended"))


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_worker_error_reaches_the_parent():
    """Gymnasium's AsyncVectorEnv pickles a worker's exception and raises
    exctype(value) in the parent: the parent sees the SpiderError itself."""
    venv = gym.vector.AsyncVectorEnv([lambda: SpiderEnv(illegal="error", max_steps=50)] * 2)
    try:
        _, infos = venv.reset(seed=3)
        illegal = np.argmin(infos["action_mask"], axis=1)  # a 0 of each mask
        with pytest.raises(SpiderError) as e:
            venv.step(illegal)
        assert e.value.code == "bad_action" and "illegal action" in e.value.message
    finally:
        venv.close(terminate=True)


def _interrupt_once(monkeypatch, name):
    """Make Client.<name> raise KeyboardInterrupt the next time it runs."""
    orig = getattr(_Client, name)

    def once(self, *args, **kwargs):
        monkeypatch.setattr(_Client, name, orig)
        raise KeyboardInterrupt

    monkeypatch.setattr(_Client, name, once)


@pytest.mark.parametrize("where", ["_decode_step", "step_receive", "_read_reply"])
def test_ctrl_c_mid_step_is_not_played_on_from(monkeypatch, where):
    """A Ctrl-C after the server took the step (in the reply's decoding,
    between sending and reading, or while waiting for the reply, where a
    real one lands) cuts the env off from where its game stands: its next
    step says so, instead of playing on out of step with the server (or
    being wedged on the unread reply); a reset opens anew, as after
    close(), and deals what a new env would."""
    env = SpiderEnv(max_steps=-1)
    try:
        _, info = env.reset(seed=0)
        a = int(np.flatnonzero(info["action_mask"])[0])
        _interrupt_once(monkeypatch, where)
        with pytest.raises(KeyboardInterrupt):
            env.step(a)
        with pytest.raises(SpiderError) as e:
            env.step(a)
        assert e.value.code == "closed" and "KeyboardInterrupt" in e.value.message
        obs, _ = env.reset(seed=1)
        fresh = SpiderEnv(max_steps=-1)
        try:
            assert (obs == fresh.reset(seed=1)[0]).all()
        finally:
            fresh.close()
        env.step(a)
    finally:
        env.close()


@pytest.mark.parametrize("shm", [True, False])
def test_ctrl_c_mid_vector_step(monkeypatch, shm):
    venv = SpiderVectorEnv(4, shm=shm)
    try:
        _, infos = venv.reset(seed=0)
        acts = np.argmax(infos["action_mask"], axis=1)
        _interrupt_once(monkeypatch, "step_receive")
        with pytest.raises(KeyboardInterrupt):
            venv.step(acts)
        with pytest.raises(SpiderError) as e:
            venv.step(acts)
        assert e.value.code == "closed" and "KeyboardInterrupt during step" in e.value.message
    finally:
        venv.close()


def test_ctrl_c_between_a_vector_steps_halves(monkeypatch):
    """A Ctrl-C landing where step's send ends and its wait begins (here at
    step_wait's first line) closes the env as anywhere else in step: it
    left the step in flight, and the next step refused to start."""
    venv = SpiderVectorEnv(4)
    try:
        _, infos = venv.reset(seed=0)
        acts = np.argmax(infos["action_mask"], axis=1)

        def interrupted(self):
            raise KeyboardInterrupt

        monkeypatch.setattr(SpiderVectorEnv, "step_wait", interrupted)
        _, _, _, _, infos = venv.step(acts)  # one request: no gap between its halves
        assert np.all(infos["moves"] == 1)
    finally:
        venv.close()


def test_a_reset_drops_a_refused_step_in_flight():
    """A reset cancels the step in flight, and that step's error with it."""
    venv = SpiderVectorEnv(2, illegal="error")
    try:
        _, infos = venv.reset(seed=0)
        venv.step_async(np.argmin(infos["action_mask"], axis=1))  # illegal: refused
        obs, _ = venv.reset(seed=1)
        assert obs.shape[0] == 2
        _, _, _, _, infos = venv.step(np.argmax(venv.action_masks(), axis=1))
        assert np.all(infos["moves"] == 1)
    finally:
        venv.close()


def test_a_refused_request_leaves_the_env_usable():
    env = SpiderEnv(illegal="error")
    try:
        _, info = env.reset(seed=0)
        with pytest.raises(SpiderError) as e:
            env.step(int(np.argmin(info["action_mask"])))
        assert e.value.code == "bad_action"
        _, _, _, _, info = env.step(int(np.argmax(info["action_mask"])))
        assert info["moves"] == 1
    finally:
        env.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("vector", [False, True])
def test_a_forked_child_cannot_drive_the_parents_game(vector):
    """A forked child that uses an env it inherited would share the
    parent's connection (each taking the other's replies, the game moved
    under the parent): it gets a clear error, and the parent plays on."""
    env: SpiderEnv | SpiderVectorEnv = SpiderVectorEnv(2, shm=True) if vector else SpiderEnv()
    try:
        _, info = env.reset(seed=0)
        mask = info["action_mask"]
        act = np.argmax(mask, axis=-1) if vector else int(np.argmax(mask))
        shared = env.client._shared
        before = None if shared is None else shared.actions.copy()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            os.close(r)
            msg = b"stepped"
            try:
                env.step(act + 1)  # not the parent's actions
            except SpiderError as e:
                msg = f"{e.code}: {e.message}".encode()
            except BaseException as e:
                msg = repr(e).encode()
            os.write(w, msg)
            os._exit(0)
        os.close(w)
        got = b""
        while chunk := os.read(r, 4096):
            got += chunk
        os.close(r)
        os.waitpid(pid, 0)
        assert got.startswith(b"forked: ") and b"make the env in the child" in got, got
        if shared is not None:  # the child wrote nothing where the server reads actions
            assert np.array_equal(shared.actions, before)
        moves = env.step(act)[4]["moves"]
        assert np.all(np.asarray(moves) == 1)
    finally:
        env.close()


def test_seeds_are_checked_before_anything_changes():
    env = SpiderEnv()
    try:
        env.reset(seed=5)
        state = env.np_random.bit_generator.state
        for bad, exc in ((2**64, ValueError), (-1, ValueError), (1.5, TypeError), ("7", TypeError)):
            with pytest.raises(exc):
                env.reset(seed=bad)
            assert env.np_random.bit_generator.state == state
    finally:
        env.close()
    venv = SpiderVectorEnv(4)
    try:
        with pytest.raises(TypeError):
            venv.reset(seed=[1.5, 2, 3, 4])
        with pytest.raises(TypeError):
            venv.reset(seed=["1", 2, 3, 4])
        # Game i is dealt seed + i: the last game's would wrap to seed 0's deal.
        with pytest.raises(ValueError, match="over 2\\*\\*64-1"):
            venv.reset(seed=2**64 - 2)
        # The first seed that wraps: the last game's would be 2**64, seed 0's deal.
        with pytest.raises(ValueError, match="over 2\\*\\*64-1"):
            venv.reset(seed=2**64 - 3)
        obs, _ = venv.reset(seed=2**64 - 4)
        assert obs.shape[0] == 4
    finally:
        venv.close()


def test_timeouts_must_be_positive():
    for kw in ({"timeout": 0}, {"timeout": -1.0}, {"connect_timeout": 0}):
        with pytest.raises(ValueError, match="positive"):
            Client("unix:/nonexistent.sock", **kw)


def test_a_partial_reset_waits_for_the_step_in_flight():
    """A reset_mask reset while a step is in flight is refused: the games
    it leaves out would go on from a step whose results were never seen
    (under disabled autoreset, a game that step ended)."""
    venv = SpiderVectorEnv(2, illegal="lose", autoreset_mode="disabled", max_steps=50)
    try:
        _, infos = venv.reset(seed=5)
        acts = np.array([np.flatnonzero(infos["action_mask"][0])[0], np.argmin(infos["action_mask"][1])])
        venv.send(acts, np.array([0, 1]))  # game 1's action is illegal: it loses
        with pytest.raises(RuntimeError, match="in flight"):
            venv.reset(options={"reset_mask": np.array([True, False])})
        _, _, term, _, infos = venv.recv()
        assert term[1] and infos["env_id"].tolist() == [0, 1]  # seen, not dropped
        _, infos = venv.reset(options={"reset_mask": np.array([False, True])})
        assert infos["num_legal"][1] > 0
    finally:
        venv.close()


def test_action_masks_are_the_callers_own():
    """action_masks() is the caller's: writing into it leaves the infos
    and the env alone, and a SpiderEnv's info["action_mask"] is the
    caller's too (the vector env's infos hold the env's masks until the
    next step: documented). With copy=False it is a read-only view, like
    the other arrays then."""
    venv = SpiderVectorEnv(2)
    view = SpiderVectorEnv(2, copy=False)
    env = SpiderEnv()
    try:
        _, infos = venv.reset(seed=0)
        m = venv.action_masks()
        assert m.flags.writeable and np.array_equal(m, infos["action_mask"].astype(bool))
        m[:] = False
        assert infos["action_mask"].any() and venv.action_masks().any()
        view.reset(seed=0)
        assert not view.action_masks().flags.writeable
        _, info = env.reset(seed=0)
        row = env.action_masks()
        row[:] = False
        assert info["action_mask"].any() and env.action_masks().any()
        info["action_mask"][:] = 0
        assert env.action_masks().any()
        _, _, _, _, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
        info["action_mask"][:] = 0
        assert env.action_masks().any()
        venv.send([], [])  # no game: [] is not a float array of games
        _, _, _, _, infos = venv.recv()
        assert infos["env_id"].size == 0
        # EnvPool's spelling: env_id, and one index for one game.
        legal = np.flatnonzero(venv.action_masks()[1])
        venv.send(legal[:1], env_id=1)
        _, _, _, _, infos = venv.recv()
        assert infos["env_id"].tolist() == [1]
        with pytest.raises(TypeError, match="not both"):
            venv.send([0], [1], env_id=1)
        # One action for one game, both scalars (numpy's or Python's).
        legal = np.flatnonzero(venv.action_masks()[0])
        venv.send(legal[0], env_id=np.int64(0))
        _, _, _, _, infos = venv.recv()
        assert infos["env_id"].tolist() == [0]
    finally:
        venv.close()
        view.close()
        env.close()


def test_step_wait_timeout_keeps_the_step_in_flight():
    """step_wait(timeout) waits as AsyncVectorEnv's does: a reply that has
    not come raises multiprocessing.TimeoutError, and the step stays in
    flight, so a later step_wait returns what an unhurried step would
    (AsyncVectorEnv loses it)."""
    venv, twin = SpiderVectorEnv(4, max_steps=50), SpiderVectorEnv(4, max_steps=50)
    try:
        _, infos = venv.reset(seed=7)
        twin.reset(seed=7)
        acts = np.argmax(infos["action_mask"], axis=1)
        with paused(venv.server.proc.pid):
            venv.step_async(acts)
            start = time.monotonic()
            with pytest.raises(multiprocessing.TimeoutError, match="still in flight"):
                venv.step_wait(timeout=0.3)
            assert 0.25 < time.monotonic() - start < 5
            with pytest.raises(multiprocessing.TimeoutError):
                venv.step_wait(timeout=0)
            for bad in (-1, float("nan"), float("inf"), True, "1"):
                with pytest.raises(ValueError, match="finite number of seconds"):
                    venv.step_wait(timeout=bad)  # type: ignore[arg-type]
        got = venv.step_wait(timeout=10)
        want = twin.step(acts)
        for a, b in zip(got[:4], want[:4], strict=True):
            assert np.array_equal(a, b)
        assert np.array_equal(got[4]["moves"], want[4]["moves"]) and (got[4]["moves"] == 1).all()
        with pytest.raises(RuntimeError, match="step_wait without step_async"):
            venv.step_wait(timeout=1)
    finally:
        venv.close()
        twin.close()


@pytest.mark.parametrize("vector", [False, True])
def test_a_failed_reset_draws_nothing(monkeypatch, vector):
    """A reset cut off (here by Ctrl-C while its reply is awaited; a
    timeout or a broken server go the same way) leaves np_random as it
    was: the reset that retries it deals the game an uninterrupted one
    would have, and a seed it carried has not seeded the generator."""

    def make():
        return SpiderVectorEnv(2) if vector else SpiderEnv()

    env, twin = make(), make()
    try:
        env.np_random, twin.np_random = np.random.default_rng(11), np.random.default_rng(11)
        _interrupt_once(monkeypatch, "_read_reply")
        with pytest.raises(KeyboardInterrupt):
            env.reset()
        assert env.np_random_seed == -1  # set by hand, not reseeded
        assert env.np_random.bit_generator.state == np.random.default_rng(11).bit_generator.state
        if not vector:
            # A SpiderEnv opens anew at its next reset, which deals what the
            # twin's first reset deals.
            assert np.array_equal(env.reset()[0], twin.reset()[0])
            env.reset(seed=3)
            state = env.np_random.bit_generator.state
            _interrupt_once(monkeypatch, "_read_reply")
            with pytest.raises(KeyboardInterrupt):
                env.reset(seed=9)
            assert env.np_random_seed == 3 and env.np_random.bit_generator.state == state
    finally:
        env.close()
        twin.close()
    if not vector:
        # Never seeded: the generator the failed reset made is kept, and the
        # retry sends the seed the failed reset sent.
        sent = []
        orig = _Client.reset

        def recording(self, *args, **kwargs):
            sent.append(kwargs.get("seed"))
            return orig(self, *args, **kwargs)

        monkeypatch.setattr(_Client, "reset", recording)
        env = SpiderEnv()
        try:
            _interrupt_once(monkeypatch, "_read_reply")
            with pytest.raises(KeyboardInterrupt):
                env.reset()
            env.reset()
            assert len(sent) == 2 and sent[0] is not None and sent[0] == sent[1], sent
        finally:
            env.close()
