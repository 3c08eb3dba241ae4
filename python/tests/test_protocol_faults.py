"""The client against a server that breaks the protocol: a proxy between the
client and a real server alters one frame, and the client must refuse it,
close the connection and leave no descriptor behind."""

from __future__ import annotations

import array
import os
import socket
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest

from spider_env import Client, SpiderError

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="descriptors and memfds are Linux's")

_HDR = struct.Struct(">I")

# What a proxy may do to a reply: given the request's op, the reply map and
# the descriptors that came with it, return the frame's payload and the
# descriptors to send on (None: send the reply as it came).
Tamper = Callable[[str, dict[str, Any], list[int]], "tuple[bytes, list[int]] | None"]


def _recv_exact(sock: socket.socket, n: int, fds: list[int] | None = None) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        if fds is None:
            chunk = sock.recv(n - len(buf))
        else:
            chunk, anc, _, _ = sock.recvmsg(n - len(buf), socket.CMSG_SPACE(8 * 4))
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    got = array.array("i")
                    got.frombytes(data[: len(data) - len(data) % got.itemsize])
                    fds.extend(got)
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


class _OneClient:
    """A Unix socket at ``path`` that serves one client with ``_serve``,
    in a thread; what goes wrong there is kept in ``errors``."""

    def __init__(self, path: Path):
        self.errors: list[BaseException] = []
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(1)
        self.listener.settimeout(10)
        self.address = f"unix:{path}"
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError as e:
            self.errors.append(e)
            return
        with conn:
            try:
                self._serve(conn)
            except (EOFError, ConnectionError):
                pass  # the client or the server closed its end (the client, on refusing a reply)
            except BaseException as e:  # reported by the test
                self.errors.append(e)

    def _serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Wait for the thread to see its client go, and close what it holds."""
        self.listener.close()
        self.thread.join(20)
        assert not self.thread.is_alive(), "the server thread did not stop"


class _Proxy(_OneClient):
    """A Unix socket that passes one client's frames to a real server and
    its replies back, altering those that ``tamper`` and ``corrupt`` pick."""

    def __init__(self, upstream: str, path: Path, tamper: Tamper | None = None, corrupt: str | None = None):
        self.upstream = upstream
        self.tamper = tamper
        self.corrupt = corrupt  # an op whose request gets a byte after its map
        super().__init__(path)

    def _serve(self, down: socket.socket) -> None:
        down.settimeout(10)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as up:
            up.settimeout(10)
            up.connect(self.upstream)
            while True:
                (n,) = _HDR.unpack(_recv_exact(down, 4))
                payload = _recv_exact(down, n)
                op = str(msgpack.unpackb(payload).get("op"))
                if op == self.corrupt:
                    payload += b"\xc0"  # bytes after the map: bad_frame, and the server stays open
                up.sendall(_HDR.pack(len(payload)) + payload)
                fds: list[int] = []
                head = _recv_exact(up, 4, fds)
                reply = _recv_exact(up, _HDR.unpack(head)[0], fds)
                out = self.tamper(op, msgpack.unpackb(reply), fds) if self.tamper else None
                if out is not None:
                    reply, sent = out
                    for fd in fds:
                        if fd not in sent:
                            os.close(fd)
                    fds = sent
                frame = _HDR.pack(len(reply)) + reply
                try:
                    if fds:
                        rights = array.array("i", fds).tobytes()
                        down.sendmsg([frame[:1]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights)])
                        down.sendall(frame[1:])
                    else:
                        down.sendall(frame)
                finally:
                    # Also when the client, refusing the frame, closed its
                    # end before the rest was sent: the proxy's own copies
                    # must not count as descriptors the client kept.
                    for fd in fds:
                        os.close(fd)


@pytest.fixture
def proxy(server, tmp_path) -> Iterator[Callable[..., _Proxy]]:
    """proxy(tamper=..., corrupt=...): a proxy to the shared server, for one
    client at its ``address``."""
    upstream = server.address.removeprefix("unix:")
    made: list[_Proxy] = []

    def start(tamper: Tamper | None = None, corrupt: str | None = None) -> _Proxy:
        p = _Proxy(upstream, tmp_path / f"proxy{len(made)}.sock", tamper, corrupt)
        made.append(p)
        return p

    yield start
    for p in made:
        p.close()
        assert not p.errors, p.errors


def _open_fds() -> Counter[str]:
    """What this process's descriptors refer to ("socket:[123]",
    "/memfd:spider-batch (deleted)", ...), counted. Not their numbers: a
    number freed and taken again by something else would hide a leak, and
    the listing's own descriptor takes whichever number is free."""
    fds = "/proc/self/fd"
    out: Counter[str] = Counter()
    for name in os.listdir(fds):
        try:
            target = os.readlink(f"{fds}/{name}")
        except FileNotFoundError:
            continue  # the listing's own descriptor, closed since
        if target != f"/proc/{os.getpid()}/fd":
            out[target] += 1
    return out


def _new_fds(before: Counter[str]) -> Counter[str]:
    """The descriptors open now that were not at before."""
    return _open_fds() - before


def _pack(reply: dict[str, Any]) -> bytes:
    return msgpack.packb(reply, use_bin_type=True)


def _edit(op: str, edit: Callable[[dict[str, Any]], object]) -> Tamper:
    """A tamper that changes the reply to op in place with edit and passes
    every other reply as it came."""

    def tamper(got: str, reply: dict[str, Any], fds: list[int]) -> tuple[bytes, list[int]] | None:
        if got != op:
            return None
        edit(reply)
        return _pack(reply), fds

    return tamper


def _is_closed_by(c: Client, why: str) -> None:
    """The client is closed, and says why to the next call."""
    assert c.closed
    with pytest.raises(SpiderError) as e:
        c.reset(seed=1)
    assert e.value.code == "closed" and why in e.value.message


def _memfd_maps() -> int:
    with open("/proc/self/maps") as f:
        return f.read().count("memfd:spider-")


def _shared_make_is_refused(proxy, tamper: Tamper, says: str, closed_by: str, n: int = 2) -> SpiderError:
    """make(n, shm=True) through a proxy that tampers with its reply raises
    "protocol" saying says, closes the client (whose next call says
    closed_by), and leaves no descriptor or mapping behind, while the
    error it raised is still alive."""
    before, maps = _open_fds(), _memfd_maps()
    p = proxy(tamper)
    with Client(p.address) as c:
        with pytest.raises(SpiderError) as e:
            c.make(n=n, shm=True)
        assert e.value.code == "protocol" and says in e.value.message, e.value.message
        _is_closed_by(c, closed_by)
    p.close()
    assert not _new_fds(before), f"the client kept descriptors: {_new_fds(before)}"
    assert _memfd_maps() <= maps, "the refused segment is still mapped"
    return e.value


def test_a_reply_to_another_request_is_refused(proxy):
    def wrong_id(op: str, reply: dict[str, Any], fds: list[int]) -> tuple[bytes, list[int]] | None:
        if op != "reset":
            return None
        reply["id"] += 1
        return _pack(reply), fds

    with Client(proxy(wrong_id).address) as c:
        c.make(n=2)
        with pytest.raises(SpiderError) as e:
            c.reset(seed=1)
        assert e.value.code == "protocol" and "does not match request id" in e.value.message
        _is_closed_by(c, "does not match")


def test_a_bad_frame_closes_the_client(proxy):
    """A server may close the connection after bad_frame; this one keeps it
    open (bytes after the map), and the client closes it all the same:
    what it sent was not read as it meant it."""
    with Client(proxy(corrupt="make").address) as c:
        with pytest.raises(SpiderError) as e:
            c.make(n=2)
        assert e.value.code == "bad_frame"
        _is_closed_by(c, e.value.message)


def test_too_many_descriptors_are_refused_and_closed(proxy):
    extra: list[int] = []

    def three(op: str, reply: dict[str, Any], fds: list[int]) -> tuple[bytes, list[int]] | None:
        if op != "make":
            return None
        extra.append(os.memfd_create("spider-test-extra"))
        return _pack(reply), [*fds, extra[0]]

    _shared_make_is_refused(proxy, three, "more descriptors", "more descriptors")
    assert extra and not any("spider-test-extra" in fd for fd in _open_fds())  # sent, and closed on both sides


@pytest.mark.parametrize("keep", [0, 1])
def test_too_few_descriptors_are_refused(proxy, keep):
    def fewer(op: str, reply: dict[str, Any], fds: list[int]) -> tuple[bytes, list[int]] | None:
        if op != "make":
            return None
        assert len(fds) == 2
        return _pack(reply), fds[:keep]

    _shared_make_is_refused(proxy, fewer, f"came with {keep} descriptors, want 2", "the make reply")


def _entry(reply: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in reply["shm_layout"] if f["name"] == name)


@pytest.mark.parametrize("name", ["obs", "actions"])
def test_a_shared_array_for_another_batch_is_refused(proxy, name):
    """obs is the layout's first array, actions its last: refused after
    every other array was mapped, the client unmaps them all at once, not
    when the error it raised is freed."""

    def short(op: str, reply: dict[str, Any], fds: list[int]) -> tuple[bytes, list[int]] | None:
        if op != "make":
            return None
        assert reply["shm_layout"][0]["name"] == "obs" and reply["shm_layout"][-1]["name"] == "actions"
        _entry(reply, name)["shape"][0] -= 1  # fits the segment, for one game fewer than the batch
        return _pack(reply), fds

    shape = "(2, 806)" if name == "obs" else "(2,)"
    says = f"shared array {name!r} of shape {shape} for 3 games"
    err = _shared_make_is_refused(proxy, short, says, "the make reply", n=3)
    assert err.__context__ is not None  # the error that held the maps is still alive


_LAYOUTS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    # what the proxy does to a shared make reply, and what the client says
    "negative size": (lambda r: r["shm_size"].__setitem__(0, -1), "shm_size is -1"),
    "huge size": (lambda r: r["shm_size"].__setitem__(0, 2**64 - 1), f"shm_size {2**64 - 1} for shared descriptor 0"),
    "size past the segment": (
        lambda r: r["shm_size"].__setitem__(1, r["shm_size"][1] + 4096),
        "for shared descriptor 1 of",
    ),
    "float offset": (lambda r: _entry(r, "masks").__setitem__("offset", 0.5), "masks's offset is 0.5"),
    "negative dimension": (lambda r: _entry(r, "obs")["shape"].__setitem__(1, -1), "obs's shape is -1"),
    "string dimension": (lambda r: _entry(r, "obs")["shape"].__setitem__(1, "806"), "obs's shape is '806'"),
    "actions read-only": (
        lambda r: _entry(r, "actions").__setitem__("fd", 0),
        "'actions': dtype 'uint16', descriptor 0",
    ),
    "obs of another type": (lambda r: _entry(r, "obs").__setitem__("dtype", "int16"), "shared array 'obs' is int16"),
    "rewards of another type": (
        lambda r: _entry(r, "rewards").__setitem__("dtype", "int32"),
        "shared array 'rewards' is int32",
    ),
    "masks of another width": (
        lambda r: _entry(r, "masks")["shape"].__setitem__(1, 1000),
        "'masks' is uint8 (3, 1000)",
    ),
    "no scores": (lambda r: r["shm_layout"].remove(_entry(r, "score")), "lacks 'score'"),
}


@pytest.mark.parametrize("alteration", sorted(_LAYOUTS))
def test_a_layout_that_cannot_be_read_closes_the_client(proxy, alteration):
    """A second make whose shared layout this client cannot read as the
    batch's arrays is refused and closes the connection: the server
    already dropped the first batch, so the client must not play on by
    its spec (or read the old segment's arrays as the new batch's)."""
    alter, says = _LAYOUTS[alteration]
    makes = []

    def second(op: str, reply: dict[str, Any], fds: list[int]) -> tuple[bytes, list[int]] | None:
        if op != "make":
            return None
        makes.append(op)
        if len(makes) == 1:
            return None
        alter(reply)
        return _pack(reply), fds

    before, maps = _open_fds(), _memfd_maps()
    p = proxy(second)
    with Client(p.address) as c:
        c.make(n=3, shm=True)
        assert c.shared and c.reset(seed=1)["obs"].shape == (3, 806)
        with pytest.raises(SpiderError) as e:
            c.make(n=3, shm=True, suits=2)
        assert e.value.code == "protocol" and says in e.value.message, e.value.message
        assert c.spec is None and not c.shared
        _is_closed_by(c, "the make reply")
    p.close()
    assert not _new_fds(before), f"descriptors left open: {_new_fds(before)}"
    assert _memfd_maps() <= maps


def test_an_unsealed_segment_is_refused(proxy):
    """A segment the server could shrink after sending it would kill the
    client with SIGBUS when read: one not sealed against shrinking (here a
    memfd of the same size and contents, unsealed) is refused unmapped."""

    def unsealed(op: str, reply: dict[str, Any], fds: list[int]) -> tuple[bytes, list[int]] | None:
        if op != "make":
            return None
        fd = os.memfd_create("spider-test-unsealed")
        os.ftruncate(fd, os.fstat(fds[0]).st_size)
        return _pack(reply), [fd, fds[1]]

    _shared_make_is_refused(proxy, unsealed, "descriptor 0 is not sealed against shrinking", "the make reply")


def test_the_proxy_passes_a_game_unaltered(proxy, server):
    """The harness itself: through a proxy that alters nothing, the shared
    batch plays as it does connected straight to the server."""
    with Client(proxy(lambda op, reply, fds: None).address) as via, Client(server.address) as direct:
        for c in (via, direct):
            c.make(n=3, shm=True)
        assert via.shared and direct.shared
        a, b = via.reset(seed=5), direct.reset(seed=5)
        assert (a["obs"] == b["obs"]).all() and (a["masks"] == b["masks"]).all()
        acts = a["masks"].argmax(axis=1)
        a, b = via.step(acts), direct.step(acts)
        assert (a["obs"] == b["obs"]).all() and (a["score"] == b["score"]).all()


class _RawServer(_OneClient):
    """A Unix socket that answers a client's first request (its hello)
    with ``frame``'s bytes, ``pace`` seconds apart if given, and then
    waits for the client to go: a server that breaks the framing."""

    def __init__(self, path: Path, frame: bytes, pace: float | None = None):
        self.frame, self.pace = frame, pace
        super().__init__(path)

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(20)
        _recv_exact(conn, _HDR.unpack(_recv_exact(conn, 4))[0])
        if self.pace is None:
            conn.sendall(self.frame)
        else:
            for i in range(len(self.frame)):
                conn.sendall(self.frame[i : i + 1])
                time.sleep(self.pace)
        while conn.recv(1 << 16):
            pass

    def close(self) -> None:
        super().close()
        assert not self.errors, self.errors


def _hello_frame(**change: Any) -> bytes:
    reply = {"ok": True, "id": 1, "version": 1, "server": "fake", "ops": ["hello"]}
    reply |= {"max_games": 1, "max_frame": 1 << 20}
    payload = _pack({**reply, **change})
    return _HDR.pack(len(payload)) + payload


def test_a_reply_longer_than_any_the_client_takes_is_refused_unread(tmp_path):
    """A frame header declares up to 4 GiB: the client refuses one longer
    than any reply it can be sent before reading or allocating it."""
    fake = _RawServer(tmp_path / "s.sock", _HDR.pack(0xFFFFFFFF) + b"\x80")
    with pytest.raises(SpiderError) as e:
        Client(fake.address, timeout=10)
    assert e.value.code == "protocol"
    says = "declared a reply of 4294967295 bytes, over the 4194304 this client takes before a batch is made"
    assert says in str(e.value)
    fake.close()


def test_a_step_reply_longer_than_the_batch_can_produce_is_refused(proxy):
    padded = _edit("reset", lambda reply: reply.update(junk=bytes(5 << 20)))
    with Client(proxy(padded).address) as c:
        c.make(n=1)
        assert 4 << 20 < c.max_reply < 5 << 20  # 4 MiB and one game's arrays
        with pytest.raises(SpiderError) as e:
            c.reset(seed=1)
        assert e.value.code == "protocol" and "over the" in e.value.message and "for this batch" in e.value.message
        _is_closed_by(c, "declared a reply of")


def test_the_timeout_bounds_a_whole_reply_however_slowly_it_comes(tmp_path):
    """Each byte comes well within the timeout, the reply not: the client
    gives up at the timeout, not when the last byte comes."""
    frame = _hello_frame()
    fake = _RawServer(tmp_path / "s.sock", frame, pace=0.05)
    start = time.monotonic()
    with pytest.raises(SpiderError) as e:
        Client(fake.address, timeout=1)
    took = time.monotonic() - start
    assert e.value.code == "timeout" and "within 1 s" in e.value.message
    assert took < len(frame) * 0.05 / 2, f"gave up after {took:.1f} s"
    fake.close()


def test_a_hello_of_another_protocol_version_is_refused(tmp_path):
    fake = _RawServer(tmp_path / "s.sock", _hello_frame(version=7))
    with pytest.raises(SpiderError) as e:
        Client(fake.address, timeout=10)
    assert e.value.code == "protocol" and "speaks protocol version 7; this client speaks 1" in e.value.message
    fake.close()


@pytest.mark.parametrize(
    ("ask", "change", "says"),
    [
        ({"n": 4}, {"n": 2}, "n is 2, not the 4 asked for"),
        ({"suits": 4}, {"suits": 1}, "suits is 1, not the 4 asked for"),
        ({"rules": "Cardems"}, {"rules": "classic"}, "rules is 'classic', not the 'Cardems' asked for"),
        ({"autoreset": "same-step"}, {"autoreset": "next-step"}, "autoreset is 'next-step'"),
        ({"illegal": "noop"}, {"illegal": "error"}, "illegal is 'error'"),
        ({"mask": "bits"}, {"mask": "bytes"}, "mask is 'bytes'"),
        ({"max_steps": 50}, {"max_steps": -1}, "max_steps is -1"),
        ({}, {"mask_row_bytes": 136}, "mask_row_bytes 136 for masks as 'bytes'"),
    ],
)
def test_a_make_reply_for_another_batch_is_refused(proxy, ask, change, says):
    """The make reply must echo what was asked, as the server resolves it
    (a name in lower case): another batch would be played by the wrong
    spec, or fail later with a bare KeyError."""
    with Client(proxy(_edit("make", lambda reply: reply.update(change))).address) as c:
        with pytest.raises(SpiderError) as e:
            c.make(**ask)
        assert e.value.code == "protocol" and says in e.value.message, e.value.message
        _is_closed_by(c, says)


def test_a_batch_made_through_request_gets_its_replies(server):
    """The raw protocol's make sets the reply bound as make() does: the
    step replies of a batch of 4096 games (some 8 MB) are taken."""
    with Client(server.address) as c:
        c.request({"op": "make", "n": 4096})
        r = c.request({"op": "reset", "seed": 1})
        assert len(r["obs"]) == 4096 * 806 and c.max_reply > len(r["obs"]) + len(r["masks"])


def test_a_make_reply_resolving_what_was_asked_is_taken(server):
    """What the server resolves is no mismatch: names in any case, 0 as
    the default, a negative max_steps as -1."""
    with Client(server.address) as c:
        spec = c.make(n=2, rules="CARDEMS", autoreset="Same-Step", mask="BITS", max_steps=-5, face_up_slots=0)
        assert spec["config"].rules == "cardems" and spec["autoreset"] == "same-step" and spec["mask"] == "bits"
        assert spec["config"].max_steps == -1 and spec["config"].face_up_slots == 78
        # Go folds case beyond ASCII as Python's lower() does not: the long
        # s is an s there, and the server made a same-step batch.
        assert c.make(n=1, autoreset="\u017fame-step")["autoreset"] == "same-step"


@pytest.mark.parametrize("key", ["final_obs", "has_final", "final_score"])
def test_a_same_step_reply_without_its_finals_closes_the_client(proxy, key):
    with Client(proxy(_edit("step", lambda reply: reply.pop(key))).address) as c:
        c.make(n=2, autoreset="same-step")
        r = c.reset(seed=1)
        with pytest.raises(SpiderError) as e:
            c.step(r["masks"].argmax(axis=1))
        assert e.value.code == "protocol" and f"no bin {key!r}" in e.value.message
        _is_closed_by(c, key)


def test_a_refusal_of_another_request_closes_the_client(proxy):
    def wrong_id(reply: dict[str, Any]) -> None:
        assert reply["ok"] is False  # a step before any reset: bad_order
        reply["id"] += 1

    with Client(proxy(_edit("step", wrong_id)).address) as c:
        c.make(n=1)
        with pytest.raises(SpiderError) as e:
            c.step([0])
        assert e.value.code == "protocol" and "does not match request id" in e.value.message
        assert "bad_order" in e.value.message
        _is_closed_by(c, "does not match")
