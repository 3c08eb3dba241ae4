"""The protocol client against a real server: framing, decoding, errors."""

from __future__ import annotations

import random

import msgpack
import numpy as np
import pytest

import spider_env
from conftest import masked_random
from spider_env import Client, SpiderError, _client


def test_hello_and_make_spec(server):
    with Client(server.address) as c:
        assert c.server_info["version"] == 1
        assert c.server_info["server"] == "spider"
        assert {"hello", "make", "reset", "step", "render", "hint", "close"} <= set(c.server_info["ops"])
        spec = c.make(n=3)
        assert spec["n"] == 3 and spec["num_actions"] == 1081
        assert spec["obs_dtype"] == "uint8" and spec["obs_shape"] == (806,)
        assert spec["obs_low"].dtype == np.uint8 and spec["obs_low"].shape == (806,)
        assert spec["obs_high"].shape == (806,) and (spec["obs_high"] >= spec["obs_low"]).all()
        assert spec["obs_high"].max() > 1
        assert spec["mask"] == "bytes" and spec["mask_row_bytes"] == 1081
        assert spec["autoreset"] == "next-step" and spec["illegal"] == "error"
        assert spec["rules"] == "classic" and spec["suits"] == 1 and spec["max_steps"] == 1000
        assert spec["workers"] >= 1

        spec = c.make(n=2, obs="float32", rules="cardems", suits=2, mask="bits", max_steps=-5)
        assert spec["obs_dtype"] == "float32" and spec["obs_low"].dtype == np.float32
        assert (spec["obs_low"] == 0).all() and (spec["obs_high"] == 1).all()
        assert spec["mask"] == "bits" and spec["mask_row_bytes"] == 136
        assert spec["rules"] == "cardems" and spec["suits"] == 2 and spec["max_steps"] == -1


def test_step_reply_arrays(server):
    with Client(server.address) as c:
        c.make(n=5, autoreset="same-step")
        r = c.reset(seed=7)
        expect = {
            "obs": (np.uint8, (5, 806)),
            "masks": (np.uint8, (5, 1081)),
            "num_legal": (np.int32, (5,)),
            "rewards": (np.float32, (5,)),
            "terminated": (np.bool_, (5,)),
            "truncated": (np.bool_, (5,)),
            "illegal": (np.bool_, (5,)),
            "score": (np.int32, (5,)),
            "moves": (np.int32, (5,)),
            "runs": (np.uint8, (5,)),
            "episode_return": (np.float32, (5,)),
            "episode_length": (np.int32, (5,)),
            "episode_won": (np.bool_, (5,)),
            "episode_runs": (np.uint8, (5,)),
            "has_final": (np.bool_, (5,)),
            "final_obs": (np.uint8, (5, 806)),
            "final_score": (np.int32, (5,)),
        }
        assert set(r) == set(expect)
        for k, (dt, shape) in expect.items():
            assert r[k].dtype == dt and r[k].shape == shape, k
        assert (r["score"] == 500).all() and (r["moves"] == 0).all() and (r["rewards"] == 0).all()
        assert (r["masks"].sum(1) == r["num_legal"]).all()
        # Fresh, writable buffers: a later reply does not overwrite them.
        obs0 = r["obs"].copy()
        assert r["obs"].flags.writeable
        r2 = c.step(masked_random(np.random.default_rng(0), r["masks"]))
        assert not np.shares_memory(r["obs"], r2["obs"])
        assert (r["obs"] == obs0).all()
        assert (r2["moves"] == 1).all()


def _spy_frames(monkeypatch):
    """The frames of every reply decoded from now on (a list that fills as
    they come), and the decoder itself."""
    frames: list[bytes] = []
    real = _client.decode_frame

    def spy(payload):
        frames.append(bytes(payload))
        return real(payload)

    monkeypatch.setattr(_client, "decode_frame", spy)
    return frames, real


def test_decoder_matches_msgpack(server, monkeypatch):
    """Our zero-copy reader decodes every reply exactly as msgpack does."""
    frames, real = _spy_frames(monkeypatch)
    with Client(server.address) as c:
        c.make(n=4, obs="float32", autoreset="same-step", max_steps=3, mask="bits")
        r = c.reset(seed=3)
        rng = np.random.default_rng(1)
        saw_final = False
        for _ in range(4):
            r = c.step(masked_random(rng, r["masks"]))
            saw_final |= bool(r["has_final"].all())
        assert saw_final  # max_steps 3: the third step ends every game
        c.render(1)
        h = c.hint(0)
        assert r["masks"][0][h["action"]] == 1 and h["reason"]
    assert len(frames) >= 9

    def plain(v):
        if isinstance(v, memoryview):
            return bytes(v)
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v

    for f in frames:
        assert plain(real(f)) == msgpack.unpackb(f, raw=False)
    # Every msgpack type the reader claims to know, round-tripped.
    ints = [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32, 2**64 - 1]
    ints += [-1, -32, -33, -128, -129, -32768, -32769, -(2**31), -(2**31) - 1, -(2**63)]
    value = {
        "a": ints,
        "f": [1.5, -0.25],
        "s": ["", "x" * 31, "y" * 32, "z" * 300, "é" * 40000],
        "b": [b"", b"q" * 300, b"r" * 70000],
        "n": None,
        "t": True,
        "F": False,
        "m": {str(i): i for i in range(20)},
        "l": list(range(20)),
        "big": [None] * 70000,
    }
    packed = msgpack.packb(value, use_bin_type=True)
    assert plain(real(packed)) == value
    assert plain(real(msgpack.packb(3.25, use_single_float=True))) == 3.25
    with pytest.raises(SpiderError) as e:
        real(packed + b"\x00")
    assert e.value.code == "protocol"
    with pytest.raises(SpiderError):
        real(packed[:-3])
    with pytest.raises(SpiderError, match="cut short: its msgpack value needs 7 more bytes"):
        real(b"\xc4\x0aabc")  # a bin of 10 bytes with 3 left


def test_decoder_refuses_what_no_server_sends(server, monkeypatch):
    """A reply a server that breaks the protocol could send, cut short,
    altered or nested without end, decodes or raises SpiderError
    "protocol": never another exception (Python's recursion limit, an
    unhashable key) for the caller to meet."""
    frames, real = _spy_frames(monkeypatch)
    with Client(server.address) as c:
        c.make(n=2, max_steps=3)
        r = c.reset(seed=3)
        c.step(r["masks"].argmax(axis=1))
        c.hint(0)
    nested = [[[{"k": [1, {"x": b"y"}]}]]]
    frames.append(msgpack.packb(nested, use_bin_type=True))

    for depth, ok in ((16, True), (17, False)):
        deep = b"\x91" * (depth - 1) + b"\x90"
        if ok:
            assert real(deep) is not None
        else:
            with pytest.raises(SpiderError, match="more than 16 deep") as e:
                real(deep)
            assert e.value.code == "protocol"
    for key in (b"\x90", b"\x80"):  # an array and a map as a map's key
        with pytest.raises(SpiderError, match="a key of type") as e:
            real(b"\x81" + key + b"\x01")
        assert e.value.code == "protocol"

    rng = random.Random(1)
    refused = 0
    for _ in range(20000):
        b = bytearray(rng.choice(frames))
        for _ in range(rng.randint(1, 4)):
            op = rng.random()
            if op < 0.4:
                b[rng.randrange(len(b))] = rng.randrange(256)
            elif op < 0.6:
                b.insert(rng.randrange(len(b) + 1), rng.randrange(256))
            elif op < 0.8 and len(b) > 1:
                del b[rng.randrange(len(b))]
            else:  # a run of container headers: deep nesting, huge declared sizes
                k = rng.randrange(len(b) + 1)
                b[k:k] = bytes([rng.choice((0x91, 0x81, 0xDC, 0xDD, 0xDE, 0xDF, 0xC6, 0xDB))]) * rng.randint(1, 300)
        try:
            real(bytes(b))
        except SpiderError as e:
            assert e.code == "protocol", e
            refused += 1
    assert refused > 10000  # most alterations make a frame no reader should accept


def test_decoder_refuses_a_flood_of_items():
    """Items are bounded together, not only by their nesting: 200,000
    empty maps (a byte each) would cost some 13 MB of Python objects from
    200 KB, and a 64 MiB frame 4 GB."""
    with pytest.raises(SpiderError) as e:
        _client.decode_frame(msgpack.packb({"ok": True, "junk": [{}] * 200_000}))
    assert e.value.code == "protocol" and "more than 131072 items" in e.value.message
    # Spread over many small arrays it is the same.
    with pytest.raises(SpiderError, match="more than 131072 items"):
        _client.decode_frame(msgpack.packb([[None] * 1000] * 140))
    assert len(_client.decode_frame(msgpack.packb([[None] * 1000] * 130))) == 130


def test_bits_and_bytes_masks_agree(server):
    """The packed masks unpack to exactly the byte masks, step after step."""
    with Client(server.address) as a, Client(server.address) as b:
        a.make(n=8, max_steps=60, mask="bytes")
        b.make(n=8, max_steps=60, mask="bits")
        ra, rb = a.reset(seed=11), b.reset(seed=11)
        rng = np.random.default_rng(2)
        for _ in range(150):
            assert (ra["masks"] == rb["masks"]).all()
            assert (ra["obs"] == rb["obs"]).all()
            assert (rb["masks"].sum(1) == rb["num_legal"]).all()
            act = masked_random(rng, ra["masks"])
            ra, rb = a.step(act), b.step(act)
        assert (ra["masks"] == rb["masks"]).all()


def test_actions_any_integer_form(server):
    with Client(server.address) as c:
        c.make(n=3, illegal="noop")
        r = c.reset(seed=5)
        first = r["masks"].argmax(1)
        r1 = c.step(first.astype(np.int32))
        with Client(server.address) as d:
            d.make(n=3, illegal="noop")
            d.reset(seed=5)
            r2 = d.step([int(x) for x in first])
        assert (r1["obs"] == r2["obs"]).all() and not r1["illegal"].any()


def test_server_errors(server):
    with Client(server.address) as c:
        with pytest.raises(SpiderError) as e:
            c.step([0])
        assert e.value.code == "bad_order" and "before make" in str(e.value)
        with pytest.raises(SpiderError) as e:
            c.make(suits=3)
        assert e.value.code == "bad_config" and "suits must be 1, 2 or 4" in str(e.value)
        assert "suits must be 1, 2 or 4" in e.value.message
        with pytest.raises(SpiderError) as e:
            c.make(rules="freecell")
        assert e.value.code == "bad_config"
        c.make(n=3, illegal="error")
        with pytest.raises(SpiderError) as e:
            c.reset(reset_mask=[True, False, True])
        assert e.value.code == "bad_order"
        r = c.reset(seed=1)
        with pytest.raises(SpiderError) as e:
            c.step([0])
        assert e.value.code == "bad_action" and "actions bin has 2 bytes; want 6" in str(e.value)
        with pytest.raises(SpiderError) as e:
            c.step([0, -1, 0])
        assert e.value.code == "bad_action" and "is not an action id" in str(e.value)
        illegal = int(np.flatnonzero(r["masks"][1] == 0)[0])
        legal = r["masks"].argmax(1)
        bad = legal.copy()
        bad[1] = illegal
        with pytest.raises(SpiderError) as e:
            c.step(bad)
        assert e.value.code == "bad_action"
        assert "env: game 1: illegal action" in str(e.value) and f"(id {illegal})" in str(e.value)
        with pytest.raises(SpiderError) as e:
            c.render(3)
        assert e.value.code == "bad_request" and "outside 0 to 2" in str(e.value)
        h = c.hint(0)
        assert r["masks"][0][h["action"]] == 1 and h["notation"] and h["reason"]
        with pytest.raises(SpiderError) as e:
            c.hint(5)
        assert e.value.code == "bad_request" and "outside 0 to 2" in str(e.value)
        with pytest.raises(SpiderError) as e:
            c.request({"op": "fly"})
        assert e.value.code == "bad_request" and "unknown op" in str(e.value)
        # The refused requests changed nothing: the connection still plays.
        r2 = c.step(legal)
        assert (r2["moves"] == 1).all() and not r2["illegal"].any()
        assert "score 499" in c.render(0)
    with pytest.raises(SpiderError) as e:
        c.step(legal)
    assert e.value.code == "closed" and "closed" in str(e.value)
    c.close()  # idempotent


def test_connect_errors(tmp_path):
    with pytest.raises(SpiderError) as e:
        Client("unix:" + str(tmp_path / "nothing.sock"))
    assert e.value.code == "connection" and "cannot connect" in str(e.value)
    with pytest.raises(ValueError):
        Client("no-port-here")


def test_timeouts_are_checked_before_a_server_starts(monkeypatch):
    """A timeout that is not a positive number of seconds is refused naming
    it, by the client and by the envs before they start a server (a string
    failed inside a comparison, after the server had started)."""
    from spider_env import envs

    started = []

    class Spy(envs.SpiderServer):
        def __init__(self, *args, **kwargs):  # pylint: disable=super-init-not-called
            started.append(1)
            raise RuntimeError("a server was started")

    monkeypatch.setattr(envs, "SpiderServer", Spy)
    bads = [("x", TypeError), ("5", TypeError), (True, TypeError)]
    bads += [(0, ValueError), (-1.0, ValueError), (float("nan"), ValueError), (float("inf"), ValueError)]
    makers = [
        lambda t: Client("unix:/nonexistent", timeout=t),
        lambda t: spider_env.SpiderEnv(timeout=t),
        lambda t: spider_env.SpiderVectorEnv(2, timeout=t),
    ]
    for bad, kind in bads:
        for make in makers:
            with pytest.raises(kind, match="timeout must be a positive number of seconds"):
                make(bad)
    with pytest.raises(TypeError, match="connect_timeout must be"):
        Client("unix:/nonexistent", connect_timeout="1")
    assert not started
    for good in (np.float32(0.5), np.int64(3), 2):
        _client.check_seconds("timeout", good)


def test_server_startup_timeout_is_checked_before_it_starts(monkeypatch):
    """SpiderServer's startup_timeout is refused naming it before a process
    starts (a string failed inside its wait, after the start)."""
    from spider_env import _server

    def no_popen(*args, **kwargs):
        raise AssertionError("a server process was started")

    monkeypatch.setattr(_server.subprocess, "Popen", no_popen)
    for bad, kind in (("5", TypeError), (None, TypeError), (0, ValueError), (float("inf"), ValueError)):
        with pytest.raises(kind, match="startup_timeout must be a positive number of seconds"):
            spider_env.SpiderServer(startup_timeout=bad)


def test_parse_address():
    import socket

    assert _client.parse_address("127.0.0.1:7878") == (socket.AF_INET, ("127.0.0.1", 7878))
    assert _client.parse_address("tcp://localhost:1") == (socket.AF_INET, ("localhost", 1))
    assert _client.parse_address(("h", "2")) == (socket.AF_INET, ("h", 2))
    assert _client.parse_address("unix:/tmp/s") == (socket.AF_UNIX, "/tmp/s")
    assert _client.parse_address("unix:///tmp/s") == (socket.AF_UNIX, "/tmp/s")
    assert _client.parse_address("./s.sock") == (socket.AF_UNIX, "./s.sock")
    assert _client.parse_address("[::1]:9")[0] == socket.AF_INET6


def test_version_exported():
    assert spider_env.PROTOCOL_VERSION == 1 and spider_env.NUM_ACTIONS == 1081


def test_make_refuses_batch_values_of_the_wrong_kind(server):
    with Client(server.address) as c:
        for bad in ({"n": 2.5}, {"n": "64"}, {"workers": True}, {"illegal_penalty": "1"}, {"mask": 1}):
            with pytest.raises(TypeError):
                c.make(**bad)
        spec = c.make(n=np.int64(3), illegal_penalty=np.float32(0.5))
        assert spec["n"] == 3


def test_make_refuses_an_option_the_server_does_not_echo(server, monkeypatch):
    with Client(server.address) as c:
        real = c.request

        def older_server(req):
            reply = real(req)
            reply.pop("face_up_slots", None)  # as a server without that option
            return reply

        monkeypatch.setattr(c, "request", older_server)
        c.make(suits=2)  # not given: nothing to miss
        with pytest.raises(SpiderError) as e:
            c.make(face_up_slots=20)
        assert "face_up_slots" in str(e.value) and "older" in str(e.value)
        # The server made that batch: the client neither keeps the spec
        # of the one it replaced (two suits) nor plays the new one.
        assert c.spec is None and c.closed
