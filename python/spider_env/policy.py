"""Policies written in Python, evaluated by ``spider eval`` on the same deals
as the built-in ones.

:func:`serve_policy` turns a callable into a *policy agent*: a server of the
policy agent protocol (PROTOCOL.md, "Policy agents") on a Unix socket or a
loopback port, which ``spider eval --policies greedy,remote:ADDRESS``
connects to. :func:`evaluate` does it all at once: it serves the callable
on a temporary Unix socket, runs ``spider eval --json`` against it and the
baselines, and returns the parsed report::

    import numpy as np, spider_env

    def first_legal(obs, masks):
        return masks.argmax(axis=1)

    report = spider_env.evaluate(first_legal, suite="classic-1suit-dev", baselines=["greedy"])
    for p in report["policies"]:
        print(p["policy"], p["win_rate"])

The agent sees what a player sees: observations (in the encoding ``obs``
selects), masks and, with ``board=True``, the visible board; never a seed
or a hidden card.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import json
import math
import os
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias, cast

import msgpack
import numpy as np
import numpy.typing as npt
from numpy.typing import NDArray

from ._client import NUM_ACTIONS, Address, SpiderError, parse_address
from ._server import _host_tag, _stale_socket, find_binary
from .config import SpiderConfig

__all__ = ["POLICY_PROTOCOL_VERSION", "PolicyServer", "evaluate", "serve_policy"]

POLICY_PROTOCOL_VERSION = 1

_HDR = struct.Struct(">I")
# The largest frame before a hello (which is small): eval's requests are
# bounded by what the hello says they hold (_request_bound).
_MAX_HELLO = 1 << 20
# The most connections served at once: eval opens one a remote policy; a
# flood of idle ones must not take every file descriptor and thread.
_MAX_CONNS = 64
# How long a new connection may take to say hello, in all.
_HELLO_TIMEOUT = 30.0
# How long a connection may wait for eval's next request after its hello:
# eval asks as soon as its games need it, so only a peer that holds a slot
# idles this long.
_IDLE_TIMEOUT = 300.0
# The largest observation a hello may declare, in bytes: the largest there
# is, float32 with four suits at 104 face-up slots, 4 * (26 + 10 * 104 * 17).
# Before, a hello could declare 1 MiB, fifteen times more, and so frames of
# 1 GiB on every connection.
_MAX_OBS_BYTES = 70_824
# The most frame bytes all connections together may hold at once: a frame
# is reserved here at its declared length before it is read, and given
# back once its reply is sent. The largest request a hello allows (4096
# games of the largest observation, with masks and boards) is about 303 MB,
# so one such fits; a frame that would pass the budget waits for it, until
# its connection's deadline, then drops the connection (said on stderr).
# Without it, 64 connections could each hold a frame of their bound at
# once. Memory is about three times the frames held: their bytes, the
# decoded message and the arrays handed to the policy.
_MAX_BUFFERED = 1 << 29
# A board's most bytes in a request (eval's remote.boardBytes).
_BOARD_BYTES = 2048


def _request_bound(hello: dict[str, Any]) -> int:
    """The most bytes an act request can hold for the game ``hello``
    describes: max_games games' observations, masks, slots, flags and
    boards, and the keys around them."""
    games = int(hello["max_games"])
    obs = int(hello["obs_shape"][0]) * (4 if hello.get("obs_dtype") == "float32" else 1)
    if not 1 <= games <= 4096 or not 0 < obs <= _MAX_OBS_BYTES:
        raise SpiderError("protocol", f"a hello of {games} games of {obs} observation bytes")
    return games * (obs + NUM_ACTIONS + 3 + _BOARD_BYTES) + 4096


PolicyFn: TypeAlias = (
    Callable[[NDArray[Any], NDArray[np.uint8]], npt.ArrayLike]
    | Callable[[NDArray[Any], NDArray[np.uint8], Any], npt.ArrayLike]
)
"""A policy: ``fn(observations, masks)``, or ``fn(observations, masks, boards)`` with
``board=True``, returning the actions (one game's, with ``batch=False``)."""


def _recv_exact(conn: socket.socket, n: int, deadline: float | None = None) -> bytearray | None:
    # Grown as the bytes come, not allocated at the declared size: a peer
    # that declares a large frame and sends nothing costs nothing. Returned
    # as it is: a copy would hold a large frame twice. With a deadline
    # (time.monotonic), the bytes must all come by then, however slowly:
    # a timeout on each recv would let a byte now and then hold on for ever.
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no whole frame in time")
            conn.settimeout(left)
        chunk = conn.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return buf


class _Budget:
    """_Budget counts the frame bytes a server's connections hold at once."""

    def __init__(self, total: int):
        self.total, self.held = total, 0
        self._cond = threading.Condition()

    def take(self, n: int, deadline: float | None) -> bool:
        """Reserve n bytes, waiting (until deadline, time.monotonic) for
        other connections to give theirs back; False, reserving nothing,
        when they do not fit by then, or never can."""
        with self._cond:
            while self.held + n > self.total:
                left = (deadline - time.monotonic()) if deadline is not None else None
                if n > self.total or (left is not None and left <= 0):
                    return False
                self._cond.wait(left)
            self.held += n
            return True

    def give(self, n: int) -> None:
        if n:
            with self._cond:
                self.held -= n
                self._cond.notify_all()


def _read_msg(
    conn: socket.socket,
    limit: int = _MAX_HELLO,
    deadline: float | None = None,
    budget: _Budget | None = None,
    held: list[int] | None = None,
) -> dict[str, Any] | None:
    """One frame's map of at most ``limit`` bytes, or None when the peer
    closed the connection; with a deadline (time.monotonic), read by then.
    With a budget, the frame's length is taken from it before the frame is
    read, waiting for it until the deadline (a frame that does not fit by
    then is a SpiderError), and added to held[0]: the caller gives it back
    once done with the message."""
    hdr = _recv_exact(conn, _HDR.size, deadline)
    if hdr is None:
        return None
    (n,) = _HDR.unpack(hdr)
    if n == 0 or n > limit:
        raise SpiderError("protocol", f"a frame of {n} bytes")
    if budget is not None and held is not None:
        if not budget.take(n, deadline):
            sys.stderr.write(
                f"spider_env policy server: a frame of {n} bytes did not fit the {budget.total} bytes"
                " all connections may hold at once in time; connection dropped\n"
            )
            raise SpiderError("protocol", f"a frame of {n} bytes, over what the agent's connections may hold at once")
        held[0] += n
    payload = _recv_exact(conn, n, deadline)
    if payload is None:
        return None
    msg = msgpack.unpackb(payload, raw=False)
    if not isinstance(msg, dict):
        raise SpiderError("protocol", "a frame that is not a map")
    return msg


def _send_msg(conn: socket.socket, msg: dict[str, Any]) -> None:
    payload = msgpack.packb(msg, use_bin_type=True)
    conn.sendall(_HDR.pack(len(payload)) + payload)


def _to_actions(out: Any, n: int) -> bytes:
    """The callable's answer as n little-endian uint16 action ids.

    An id outside 0..1080 is sent as 1081, which eval reports as an
    illegal action of that game alone; the id the policy returned is said
    on stderr.
    """
    if out is None:
        raise TypeError(f"the policy returned None, want {n} action ids")
    a = np.asarray(out)
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
        # Booleans too: a mask's comparison returned by mistake would play 0 and 1.
        raise TypeError(f"the policy returned {type(out).__name__} of dtype {a.dtype}, want integer action ids")
    if a.ndim == 0:
        a = a.reshape(1)
    a = a.reshape(-1)
    if a.shape[0] != n:
        raise ValueError(f"the policy returned {a.shape[0]} actions for {n} games")
    bad = (a < 0) | (a >= NUM_ACTIONS)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        print(
            f"spider policy: the policy returned action {a[i]} (row {i} of {n}), outside 0 to {NUM_ACTIONS - 1}: "
            f"{int(bad.sum())} such actions are played as illegal",
            file=sys.stderr,
        )
    a = np.where(bad, NUM_ACTIONS, a)
    return a.astype("<u2").tobytes()


def _cut(text: str, limit: int = 256) -> str:
    """text in at most limit bytes of UTF-8: what eval keeps of an agent's error."""
    # Re-decoded even when short: a lone surrogate (a path decoded with
    # surrogateescape) cannot be sent, and would cost the connection.
    b = text.encode("utf-8", errors="replace")
    return b.decode("utf-8") if len(b) <= limit else b[: limit - 3].decode("utf-8", errors="ignore") + "..."


class PolicyServer:
    """A policy agent serving ``fn`` on ``address`` (``"unix:/path"`` or a loopback ``"host:port"``).

    With ``batch=True`` (the default) ``fn(observations, masks)`` gets an
    ``(n, obs_len)`` array (uint8 for the compact encoding, float32 for
    float32) and an ``(n, 1081)`` uint8 mask array for n games at once and
    returns n action ids; with ``batch=False`` it gets one game's
    observation and mask and returns one id. With ``board=True`` it gets
    a third argument: the visible boards (a list of dicts, or one dict),
    each with ``face_down`` (10 counts), ``face_up`` (10 ``bytes`` of
    card codes, deepest first: suit*13 + rank, Ace = 1), ``stock_left``,
    ``runs``, ``score`` and ``steps``.

    An exception in ``fn`` is printed and answered as an error (its text
    cut to the 256 bytes eval keeps), so eval fails that request's games
    and goes on. Calls to ``fn`` never overlap, even with several
    connections to this server. eval's ``--remote-timeout`` bounds one
    request: ``--remote-batch`` games, so with ``batch=False`` that many
    calls of ``fn``. :attr:`address` is what ``spider eval --policies
    remote:ADDRESS`` takes. A Unix socket left at ``address`` by an agent
    that was killed is replaced; a live one is refused. :meth:`start`
    serves from a background thread; :meth:`serve_forever` from the
    calling one.

    Anyone who can connect (any local user, on a loopback port) is
    untrusted: the agent serves at most 64 connections at once, drops one
    whose hello has not come whole within 30 s, or whose next request has
    not come whole 5 minutes after a reply (eval asks as soon as its
    games need it), or
    a frame larger than 1 MiB before its hello or than the hello's games
    can hold after it (at most about 303 MB), or one that would take the frames
    all its connections hold at once past 512 MiB until its deadline (it
    waits for the others' to end till then), and goes on serving
    when file descriptors, memory or threads run out.
    """

    def __init__(
        self,
        fn: PolicyFn,
        address: Address,
        *,
        batch: bool = True,
        board: bool = False,
        name: str = "python",
    ):
        if not isinstance(name, str) or not name or not name.isprintable():
            raise ValueError(f"name {name!r}: want printable text (eval names the policy NAME (remote))")
        try:
            if len(name.encode("utf-8")) > 64:
                raise ValueError(f"name {name!r} is over the 64 bytes eval keeps")
        except UnicodeEncodeError as e:
            raise ValueError(f"name {name!r} is not UTF-8: {e}") from None
        self.fn, self.batch, self.board, self.name = fn, batch, board, name
        family, sockaddr = parse_address(address)
        self._path: str | None = None
        if family == socket.AF_UNIX:
            assert isinstance(sockaddr, str)
            if _stale_socket(sockaddr):
                os.unlink(sockaddr)  # a killed agent's: nobody listens there
            elif os.path.lexists(sockaddr):
                raise FileExistsError(f"{sockaddr} exists (a live agent, or not a socket): choose a fresh socket path")
            self._path = sockaddr
        else:
            assert isinstance(sockaddr, tuple)
            host = sockaddr[0]
            try:
                loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
            except ValueError:
                loopback = False
            if not loopback:
                # spider eval connects only to agents on this machine.
                raise ValueError(f"address {address!r}: the host must be loopback (localhost, 127.0.0.0/8, ::1)")
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            if family != socket.AF_UNIX:
                self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._sock.bind(sockaddr)
            if self._path is not None:
                # Before listen, so no one can connect while the socket
                # still has the umask's mode (a connect is refused until then).
                os.chmod(self._path, 0o600)
            self._sock.listen(8)
            self._sock.settimeout(0.2)  # the accept loop checks for close() this often
        except BaseException:
            self._sock.close()
            raise
        if self._path is not None:
            self.address = "unix:" + self._path
        else:
            h, port = self._sock.getsockname()[:2]
            self.address = f"[{h}]:{port}" if ":" in h else f"{h}:{port}"
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._conns = threading.BoundedSemaphore(_MAX_CONNS)
        self._live: set[socket.socket] = set()  # the connections being served, which close() ends
        self._live_lock = threading.Lock()  # not _lock, which a policy call holds (and may close() under)
        self._budget = _Budget(_MAX_BUFFERED)
        self._thread: threading.Thread | None = None
        self.hello: dict[str, Any] | None = None
        """The last hello received: the game's options and spaces."""

    def start(self) -> PolicyServer:
        """Serve from a daemon thread; returns self."""
        self._thread = threading.Thread(target=self.serve_forever, name="spider-policy", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Accept connections until :meth:`close`; each is served by a thread
        of its own, at most 64 at once (more are closed at once), and must
        say hello within 30 s. Running out of file descriptors, memory or
        threads (a flood of idle connections, say) refuses connections for a
        moment; it does not stop the server."""
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError as e:
                if self._stop.is_set():
                    return
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED):
                    self._stop.wait(0.1)  # until connections close
                    continue
                raise
            if not self._conns.acquire(blocking=False):
                conn.close()  # over _MAX_CONNS: eval sees its connection closed
                continue
            with self._live_lock:
                self._live.add(conn)
            if self._stop.is_set():
                # close() ran while this was accepted (serve_forever on the
                # caller's thread, which close does not join): its shutdown
                # of the live connections may have missed this one.
                self._drop(conn)
                return
            try:
                threading.Thread(target=self._serve_conn, args=(conn,), daemon=True).start()
            except RuntimeError:  # no thread to be had
                self._drop(conn)

    def _drop(self, conn: socket.socket) -> None:
        """Close a connection accepted and not served, giving back its place."""
        with self._live_lock:
            self._live.discard(conn)
        conn.close()
        self._conns.release()

    def close(self) -> None:
        """Stop accepting, end the connections being served (a call of the
        policy under way finishes, its answer not sent; none is made after),
        and remove the socket file."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._sock.close()
        with self._live_lock:
            live = list(self._live)
        for conn in live:
            # Their threads wait in a read, which this ends; closing the
            # socket here instead would leave the read waiting out its
            # timeout (up to 5 minutes) and free the descriptor under it.
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already gone
        if self._path is not None:
            try:
                os.unlink(self._path)
            except FileNotFoundError:
                pass

    def __enter__(self) -> PolicyServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _serve_conn(self, conn: socket.socket) -> None:
        with conn:
            obs_dtype: npt.DTypeLike = np.uint8
            obs_len = 0
            limit = _MAX_HELLO
            # The hello must come whole within _HELLO_TIMEOUT; after it,
            # each request must come whole within _IDLE_TIMEOUT of the last
            # reply: a timeout on each read let a byte now and then hold
            # the connection, and its slot, for ever.
            deadline: float | None = time.monotonic() + _HELLO_TIMEOUT
            held = [0]  # the bytes of _budget this connection's frame holds
            msg: dict[str, Any] | None = None
            try:
                while True:
                    # The last frame's bytes, its reply sent: the decoded
                    # message that holds them goes first, or an idle
                    # connection would keep them while the budget counts
                    # them free.
                    msg = None
                    self._budget.give(held[0])
                    held[0] = 0
                    if deadline is None:
                        msg = _read_msg(conn, limit, time.monotonic() + _IDLE_TIMEOUT, self._budget, held)
                        conn.settimeout(_IDLE_TIMEOUT)  # for the reply's send
                    else:
                        msg = _read_msg(conn, limit, deadline, self._budget, held)
                    if msg is None or self._stop.is_set():
                        return  # the peer is done, or close() ended the connection
                    op, rid = msg.get("op"), msg.get("id")
                    if op == "hello":
                        if msg.get("version") != POLICY_PROTOCOL_VERSION:
                            _send_msg(
                                conn, {"ok": False, "id": rid, "error": f"want version {POLICY_PROTOCOL_VERSION}"}
                            )
                            return
                        limit = _request_bound(msg)
                        self.hello = msg
                        obs_dtype = np.dtype("<f4") if msg.get("obs_dtype") == "float32" else np.dtype(np.uint8)
                        obs_len = int(msg["obs_shape"][0])
                        deadline = None
                        conn.settimeout(_IDLE_TIMEOUT)  # for the reply's send too
                        reply = {"ok": True, "id": rid, "version": POLICY_PROTOCOL_VERSION, "name": self.name}
                        _send_msg(conn, {**reply, "board": self.board})
                    elif op == "act" and deadline is not None:
                        # Before a hello there is no observation's shape to read.
                        _send_msg(conn, {"ok": False, "id": rid, "error": "act before hello"})
                        return
                    elif op == "act":
                        _send_msg(conn, self._act(msg, rid, obs_dtype, obs_len))
                    elif op == "close":
                        return
                    else:
                        _send_msg(conn, {"ok": False, "id": rid, "error": _cut(f"unknown op {op!r}")})
            except Exception:
                # A broken connection, or a peer that does not speak the
                # protocol (bad msgpack, missing fields): drop it.
                return
            finally:
                self._budget.give(held[0])
                with self._live_lock:
                    self._live.discard(conn)
                self._conns.release()

    def _act(self, msg: dict[str, Any], rid: Any, obs_dtype: npt.DTypeLike, obs_len: int) -> dict[str, Any]:
        try:
            n = int(msg["n"])
            # Copies, so the callable may write into them (torch warns on read-only arrays).
            obs = np.frombuffer(msg["obs"], dtype=obs_dtype).reshape(n, obs_len).copy()
            masks = np.frombuffer(msg["masks"], dtype=np.uint8).reshape(n, NUM_ACTIONS).copy()
            boards: list[Any] = msg.get("boards") or [None] * n
            fn = cast(Callable[..., Any], self.fn)  # board says which of PolicyFn's two it is
            with self._lock:
                if self._stop.is_set():
                    # close() ran after this request was read: no call after it.
                    return {"ok": False, "id": rid, "error": "the agent was closed"}
                if self.batch:
                    out = fn(obs, masks, boards) if self.board else fn(obs, masks)
                elif self.board:
                    out = [fn(obs[i], masks[i], boards[i]) for i in range(n)]
                else:
                    out = [fn(obs[i], masks[i]) for i in range(n)]
            return {"ok": True, "id": rid, "actions": _to_actions(out, n)}
        except BaseException as e:
            # SystemExit and the like from fn too: this thread serves eval,
            # which must hear of it rather than lose the connection.
            for line in traceback.format_exception(e):  # each line cut: an error may hold megabytes
                sys.stderr.write(line if len(line) <= 2000 else line[:2000] + "...\n")
            return {"ok": False, "id": rid, "error": _cut(f"{type(e).__name__}: {e}")}


def serve_policy(
    fn: PolicyFn,
    address: Address,
    batch: bool = True,
    *,
    board: bool = False,
    name: str = "python",
) -> None:
    """Serve ``fn`` as a policy agent on ``address`` until interrupted (see :class:`PolicyServer`).

    Then, in another shell: ``spider eval --suite classic-1suit-test
    --policies greedy,remote:ADDRESS``.
    """
    with PolicyServer(fn, address, batch=batch, board=board, name=name) as server:
        print(f"spider policy agent {name!r} listening on {server.address}", file=sys.stderr)
        installed, old = False, None
        if threading.current_thread() is threading.main_thread():
            # SIGTERM (kill, a service manager) stops it as Ctrl-C does, so
            # that the socket file is removed.
            def stop(signum: int, frame: Any) -> None:
                raise KeyboardInterrupt

            old, installed = signal.signal(signal.SIGTERM, stop), True
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            if installed:
                # None: a handler set outside Python, which the default stands for.
                signal.signal(signal.SIGTERM, old if old is not None else signal.SIG_DFL)


# The host tag is optional: names before it had none.
_AGENT_DIR = re.compile(r"spider-agent-([0-9]+)-(?:([0-9a-f]{8})-)?")


def _remove_stale_agent_dirs(parent: str) -> None:
    """Remove the socket folders of evaluate() calls whose Python process was
    killed (their names carry its pid and host), this user's only."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for entry in names:
        m = _AGENT_DIR.match(entry)
        if not m or m.group(2) not in (None, _host_tag()):
            continue
        path = os.path.join(parent, entry)
        try:
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                continue
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            sock = os.path.join(path, "agent.sock")
            # A pid of another pid namespace sharing this folder may look
            # dead: a socket someone listens on is kept.
            if not os.path.lexists(sock) or _stale_socket(sock):
                shutil.rmtree(path, ignore_errors=True)
        except (OSError, OverflowError, AttributeError):
            continue


# The write ends of the pipes evaluate() gives eval as stdin: a forked child
# closes its copies, so that eval still stops when this process dies.
_alive_fds: set[int] = set()


def _close_alive_in_child() -> None:
    for fd in list(_alive_fds):
        with contextlib.suppress(OSError):
            os.close(fd)
    _alive_fds.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_alive_in_child)


def evaluate(
    fn: PolicyFn,
    suite: str | None = None,
    baselines: str | Sequence[str] = ("greedy",),
    *,
    seeds: str | None = None,
    batch: bool = True,
    board: bool = False,
    name: str = "python",
    obs: str | None = None,
    game: SpiderConfig | Mapping[str, Any] | None = None,
    remote_timeout: float = 5.0,
    remote_batch: int | None = None,
    workers: int = 0,
    per_game: bool = False,
    binary: str | None = None,
    extra_args: Sequence[str] = (),
    verbose: bool = False,
) -> dict[str, Any]:
    """Evaluate ``fn`` with ``spider eval`` against ``baselines`` on the same deals.

    ``suite`` names a benchmark suite (``spider eval --list-suites``); or
    give ``seeds`` (``"1-100"``) and the game options in ``game``, a
    :class:`SpiderConfig` or a dict of its fields (PROTOCOL.md's table, e.g.
    ``{"suits": 2, "max_steps": 500}``; values of the field's type, None
    the default, an unknown key a TypeError, as for the environments).
    ``obs`` is the observation encoding ``fn`` gets (``compact``, the
    default, or ``float32``; ``game``'s ``obs`` may give it instead, and
    the two must agree);
    ``batch`` and ``board`` are :class:`PolicyServer`'s. The baselines are
    built-in policies (any ``spider eval --policies`` takes: ``random``,
    ``greedy``, ``search``, ``nn:PATH``, ...; a list, or one string with
    commas); ``search`` takes
    minutes on a 1000-deal suite. ``remote_timeout`` (seconds) bounds one
    request of ``remote_batch`` games (default 64, or 8 with
    ``batch=False``, where each game is a call of ``fn``).

    eval runs as a child that stops when this process does, however it
    ends (``spider eval --exit-with-stdin``); the socket's temporary
    folder of a killed process is removed by the next call.

    Returns the report of ``spider eval --json`` (docs/results.md, "The eval
    JSON schema") as plain dicts and lists: ``policies`` (win rates,
    scores, ``failures``), ``comparisons`` (paired tests), ``failures``
    (``fn``'s games that ended early: an illegal action, an error, a
    timeout) and, with ``per_game``, ``games``. ``fn``'s policy is the last
    one, named ``NAME (remote)``. ``verbose`` lets eval's progress through
    to stderr. Raises :class:`SpiderError` if eval fails; its ``report``
    attribute holds the report eval wrote before failing (the deals played,
    when a ``--record`` folder could not be written, say), or None.
    """
    if (suite is None) == (seeds is None):
        raise ValueError("give one of suite and seeds")
    cfg = game if isinstance(game, SpiderConfig) else SpiderConfig.resolve(None, **dict(game or {}))
    if obs is not None and cfg.obs is not None and obs.lower() != cfg.obs.lower():
        raise ValueError(f"obs={obs!r} and game's obs={cfg.obs!r} disagree: give one")
    obs = obs if obs is not None else (cfg.obs or "compact")
    if isinstance(baselines, str):
        baselines = [b for b in baselines.split(",") if b]
    try:
        ok = not isinstance(remote_timeout, bool) and math.isfinite(float(remote_timeout)) and remote_timeout > 0
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise ValueError(f"remote_timeout {remote_timeout!r}: want a positive, finite number of seconds")
    if remote_batch is None:
        remote_batch = 64 if batch else 8
    exe = binary or find_binary()
    prefix = f"spider-agent-{os.getpid()}-{_host_tag()}-"
    parent = tempfile.gettempdir()
    if len(parent) > 50 or "," in parent:  # sun_path holds 108 bytes; --policies splits at commas
        parent = "/tmp"
    _remove_stale_agent_dirs(parent)
    tmpdir = tempfile.mkdtemp(prefix=prefix, dir=parent)
    alive_r = alive_w = -1
    try:
        alive_r, alive_w = os.pipe()  # eval's stdin: it ends when this process does
        _alive_fds.add(alive_w)
        with PolicyServer(
            fn, "unix:" + os.path.join(tmpdir, "agent.sock"), batch=batch, board=board, name=name
        ) as server:
            server.start()
            cmd = [exe, "eval", "--json", "--exit-with-stdin"]
            cmd += ["--policies", ",".join([*baselines, "remote:" + server.address])]
            cmd += ["--suite", suite] if suite is not None else ["--seeds", str(seeds)]
            ms = max(1, round(remote_timeout * 1000))
            cmd += ["--obs", obs, "--remote-timeout", f"{ms}ms", "--remote-batch", str(int(remote_batch))]
            if workers:
                cmd += ["--workers", str(int(workers))]
            if per_game:
                cmd.append("--per-game")
            for key, value in cfg.to_request().items():
                if key != "obs":  # given above
                    cmd += ["--" + key.replace("_", "-"), str(value)]
            cmd += list(extra_args)
            proc = subprocess.run(
                cmd,
                stdin=alive_r,
                stdout=subprocess.PIPE,
                stderr=None if verbose else subprocess.PIPE,
                check=False,
            )
    finally:
        _alive_fds.discard(alive_w)
        for fd in (alive_r, alive_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        shutil.rmtree(tmpdir, ignore_errors=True)
    if proc.returncode != 0:
        err = (
            proc.stderr.decode(errors="replace").strip()
            if proc.stderr
            else f"exit status {proc.returncode} (its messages are above)"
        )
        e = SpiderError("eval", f"spider eval failed: {err}")
        # eval writes its report before what can still fail (records) and
        # on a stop: what was played is kept with the error.
        with contextlib.suppress(ValueError):
            e.report = json.loads(proc.stdout)
        raise e
    report: dict[str, Any] = json.loads(proc.stdout)
    return report
