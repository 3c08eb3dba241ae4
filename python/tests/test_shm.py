"""Shared memory and asynchronous stepping: the same games, byte for byte,
whichever path carries them, and nothing left behind by a crash."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import masked_random
from spider_env import SpiderError, SpiderServer, SpiderVectorEnv

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="shared memory is Linux's (memfd)")

STEP_KEYS = ("score", "runs", "moves", "num_legal", "illegal")


def _dev_shm() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def _memfd_maps(pid: int | str) -> int:
    with open(f"/proc/{pid}/maps") as f:
        return f.read().count("memfd:spider-")


def _same(a: dict, b: dict, where: str) -> None:
    assert a.keys() == b.keys(), where
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, dict):
            _same(x, y, f"{where} {k}")
        elif k == "legal_actions":
            # Each row's listed part, as many ids as its mask has ones (the
            # rest is stale in shared memory, zeros when computed here).
            counts = np.asarray(a["action_mask"]).astype(bool).sum(axis=1)
            assert x.dtype == y.dtype == np.int16 and x.shape == y.shape, f"{where} {k}"
            for row, c in enumerate(counts):
                assert x[row, :c].tobytes() == y[row, :c].tobytes(), f"{where} {k} row {row}"
        elif k == "final_obs":
            assert [None if o is None else o.tobytes() for o in x] == [None if o is None else o.tobytes() for o in y], (
                f"{where} {k}"
            )
        else:
            x, y = np.asarray(x), np.asarray(y)
            assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), f"{where} {k}"


@pytest.mark.parametrize(
    ("mode", "obs"),
    [("next-step", "compact"), ("same-step", "compact"), ("same-step", "float32"), ("disabled", "compact")],
)
def test_shared_memory_matches_the_socket(server, mode, obs):
    """3,000 steps of the same games through shared memory and through the
    socket (bit-packed masks): every array and info byte for byte, steps of
    every game (step, step_async/step_wait) and of some (send/recv) mixed;
    the legal lists the server writes beside the masks as the client
    computes them from the socket's masks.
    The Go tests check the socket (TestServeMatchesBatch) and shared memory
    (TestShmMatchesBatch) against the in-process batch."""
    n = 9
    kw = {
        "address": server,
        "autoreset_mode": mode,
        "max_steps": 80,
        "illegal": "noop",
        "obs": obs,
        "legal_actions": True,
    }
    shm = SpiderVectorEnv(n, shm=True, **kw)
    sock = SpiderVectorEnv(n, shm=False, mask="bits", **kw)
    try:
        assert shm.shared and not sock.shared
        o1, i1 = shm.reset(seed=12)
        o2, i2 = sock.reset(seed=12)
        _same({"obs": o1, **i1}, {"obs": o2, **i2}, "reset")
        rng = np.random.default_rng(3)
        ended = 0
        for step in range(3000):
            actions = masked_random(rng, i1["action_mask"].view(np.uint8))
            if step % 97 == 5:
                actions[2] = 1080  # now and then an illegal move: the noop policy's flag
            if step % 4 == 1:
                ids = rng.permutation(n)[: rng.integers(1, n + 1)]
                shm.send(actions[ids], ids)
                sock.send(actions[ids], ids)
                r1, r2 = shm.recv(), sock.recv()
                assert list(r1[4]["env_id"]) == list(ids)
            elif step % 4 == 2:
                shm.step_async(actions)
                sock.step_async(actions)
                r1, r2 = shm.step_wait(), sock.step_wait()
            else:
                r1, r2 = shm.step(actions), sock.step(actions)
            for k, (x, y) in enumerate(zip(r1[:4], r2[:4], strict=True)):
                assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), f"step {step} result {k}"
            _same(r1[4], r2[4], f"step {step}")
            assert shm.action_masks().tobytes() == sock.action_masks().tobytes(), f"step {step} masks"
            i1 = {"action_mask": shm.action_masks().view(np.int8)}
            done = r1[2] | r1[3]
            ended += int(done.sum())
            if mode == "disabled":
                dead = shm.action_masks().sum(axis=1) == 0
                if dead.any():
                    o1, j1 = shm.reset(options={"reset_mask": dead})
                    o2, j2 = sock.reset(options={"reset_mask": dead})
                    _same({"obs": o1, **j1}, {"obs": o2, **j2}, f"reset at {step}")
                    i1 = {"action_mask": shm.action_masks().view(np.int8)}
        assert ended > 2 * n, "the test should cover many episode ends"
    finally:
        shm.close()
        sock.close()


def test_copy_false_returns_views_and_copy_true_new_arrays(server):
    env = SpiderVectorEnv(4, address=server, shm=True, copy=False, legal_actions=True)
    kept = SpiderVectorEnv(4, address=server, shm=True)
    try:
        obs, info = env.reset(seed=5)
        obs_k, _ = kept.reset(seed=5)
        assert not obs.flags.writeable and obs_k.flags.writeable
        # The lists are the server's, in the segment, not computed here.
        assert not info["legal_actions"].flags.writeable
        before, before_k = obs.copy(), obs_k.copy()
        env.step(info["action_mask"].argmax(axis=1))
        kept.step(info["action_mask"].argmax(axis=1))
        assert obs.tobytes() != before.tobytes(), "a view of the shared memory shows the next step"
        assert obs_k.tobytes() == before_k.tobytes(), "copy=True returns arrays the next step leaves alone"
        with pytest.raises(ValueError):
            obs[0, 0] = 1  # read-only: the server's buffers are not the client's to write
        # The small per-game arrays are copied even so: they are cheap, and
        # code that keeps a step's rewards or scores must not see the next.
        _, rewards, _, _, info = env.step(info["action_mask"].argmax(axis=1))
        kept_rewards, kept_score = rewards.copy(), info["score"].copy()
        env.step(info["action_mask"].argmax(axis=1))
        assert np.array_equal(rewards, kept_rewards) and np.array_equal(info["score"], kept_score)
    finally:
        env.close()
        kept.close()


def test_tcp_falls_back_to_the_socket():
    with SpiderServer(transport="tcp") as server:
        env = SpiderVectorEnv(3, address=server)
        try:
            assert not env.shared
            env.reset(seed=1)
        finally:
            env.close()
        with pytest.raises(ValueError, match="shm=True"):
            SpiderVectorEnv(3, address=server, shm=True)


def test_send_recv_refuses_bad_use(server):
    env = SpiderVectorEnv(4, address=server)
    try:
        with pytest.raises(Exception, match="reset"):
            env.send([0], [1])
        env.reset(seed=1)
        with pytest.raises(RuntimeError, match="recv without send"):
            env.recv()
        with pytest.raises(ValueError, match="twice"):
            env.send([0, 0], [1, 1])
        with pytest.raises(ValueError, match="0 to 3"):
            env.send([0], [4])
        env.send(env.action_masks()[[2]].argmax(axis=1), [2])
        with pytest.raises(RuntimeError, match="in flight"):
            env.step_async(np.zeros(4, np.int64))
        with pytest.raises(RuntimeError, match="step_wait without step_async"):
            env.step_wait()
        obs, rew, term, trunc, info = env.recv()
        assert obs.shape == (1, 806) and list(info["env_id"]) == [2]
    finally:
        env.close()


_CLIENT = """
import sys, numpy as np
from spider_env import SpiderVectorEnv
env = SpiderVectorEnv(64, address=sys.argv[1], shm=True)
obs, info = env.reset(seed=1)
for _ in range(20):
    obs, *_, info = env.step(info["action_mask"].argmax(axis=1))
print("ready", flush=True)
import time
time.sleep(60)
"""


def test_client_killed_leaves_nothing_behind():
    shm_before = _dev_shm()
    with SpiderServer() as server:
        p = subprocess.Popen([sys.executable, "-c", _CLIENT, server.address], stdout=subprocess.PIPE, text=True)
        try:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
            assert _memfd_maps(server.pid) == 2  # the buffers and the actions
            os.kill(p.pid, signal.SIGKILL)
            p.wait(timeout=10)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        deadline = time.monotonic() + 10
        while _memfd_maps(server.pid) != 0:
            assert time.monotonic() < deadline, "the server still maps a killed client's segment"
            time.sleep(0.02)
        assert _dev_shm() == shm_before
        env = SpiderVectorEnv(8, address=server)  # a new client works
        try:
            assert env.shared
            _, info = env.reset(seed=2)
            env.step(info["action_mask"].argmax(axis=1))
        finally:
            env.close()
    assert _dev_shm() == shm_before


def test_server_killed_leaves_nothing_behind():
    shm_before = _dev_shm()
    env = SpiderVectorEnv(16)
    try:
        assert env.shared and env.server is not None
        _, info = env.reset(seed=3)
        assert _memfd_maps("self") == 2
        os.kill(env.server.pid, signal.SIGKILL)
        env.server.proc.wait(timeout=10)
        with pytest.raises(SpiderError) as e:
            for _ in range(3):  # the first may still be taken by the dying socket
                env.step(info["action_mask"].argmax(axis=1))
        assert e.value.code in ("connection", "closed")
    finally:
        env.close()
    # Closing the client unmapped the segment: it is gone with both ends.
    assert _memfd_maps("self") == 0
    assert _dev_shm() == shm_before
    env = SpiderVectorEnv(4)  # a new server and client work
    try:
        assert env.shared
        _, info = env.reset(seed=1)
        env.step(info["action_mask"].argmax(axis=1))
    finally:
        env.close()


def test_failed_make_keeps_the_shared_batch(server):
    """A make the server refuses changes nothing: the batch and its shared
    memory stay, and the client goes on reading them."""
    env = SpiderVectorEnv(5, address=server, shm=True, illegal="noop")
    try:
        _, info = env.reset(seed=4)
        with pytest.raises(SpiderError) as e:
            env.client.make(n=5, suits=3, shm=True)
        assert e.value.code == "bad_config"
        assert env.shared
        obs, *_ = env.step(info["action_mask"].argmax(axis=1))
        ref = SpiderVectorEnv(5, address=server, shm=False, illegal="noop")
        try:
            _, rinfo = ref.reset(seed=4)
            robs, *_ = ref.step(rinfo["action_mask"].argmax(axis=1))
            assert robs.tobytes() == obs.tobytes()
        finally:
            ref.close()
    finally:
        env.close()
