"""A client of the spider socket protocol (PROTOCOL.md, version 1).

One :class:`Client` is one connection, which owns one batch of games on the
server. Requests are msgpack maps behind a 4-byte big-endian length; arrays
travel as msgpack bin of raw little-endian bytes.

Replies are decoded by a small msgpack reader of our own that reads each
frame into a fresh buffer and returns every bin as a view of it, so the
arrays of a step reply (observations, masks, ...) are built without copying
the bytes, are writable, and belong to the caller: the next reply goes into
a new buffer and never overwrites them.
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import math
import mmap
import numbers
import operator
import os
import selectors
import socket
import struct
import sys
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeAlias, TypedDict, cast

import msgpack
import numpy as np
import numpy.typing as npt
from numpy.typing import NDArray

from .config import SpiderConfig

__all__ = [
    "NUM_ACTIONS",
    "PROTOCOL_VERSION",
    "Address",
    "Client",
    "HelloReply",
    "HintReply",
    "MakeReply",
    "ObsArray",
    "SpiderError",
    "StepReply",
    "parse_address",
]

PROTOCOL_VERSION = 1
NUM_ACTIONS = 1081
PACKED_ROW_BYTES = (NUM_ACTIONS + 7) // 8

_HDR = struct.Struct(">I")

# The largest socket receive buffer a client asks for; the kernel bounds it
# further (net.core.rmem_max).
_MAX_RCVBUF = 8 << 20

# The smallest: a window many loopback segments (64 KiB) wide, so that a
# reply longer than it (a picture of 921,600 bytes a game) streams rather
# than waiting on TCP's timers for each piece.
_MIN_RCVBUF = 4 << 20

# The largest reply taken before a batch is made, and beside a batch's own
# replies after: hello, make (two observations' bounds), errors, render's
# picture (921,600 bytes) and hint. A batch's step replies add their arrays
# (Client._reply_limit). A frame declared longer is refused before
# anything is allocated for it: a broken or hostile server must not make
# the client allocate the 4 GiB a frame header can declare.
_SETUP_REPLY = 4 << 20

# The most items the arrays and maps of one reply may hold together: real
# replies hold a few dozen (hello's lists, make's fields, a shared
# layout's entries), while each item built is a Python object of 50-100
# bytes, so a 1-byte empty map repeated costs 60 times its frame: this
# bounds that to about 13 MB, whatever the frame's size.
_MAX_ITEMS = 1 << 17


Address: TypeAlias = str | os.PathLike[str] | tuple[str, int]
"""A server address: ``"host:port"``, ``"unix:/path"``, a socket path or ``(host, port)``."""

ObsArray: TypeAlias = NDArray[np.uint8] | NDArray[np.float32]
"""Observations: uint8 for the compact encoding, float32 for float32 (``make``'s ``obs``)."""

Seed: TypeAlias = int | np.integer[Any]
"""A deal's seed: a Python or numpy integer from 0 to 2**64-1."""

Seeds: TypeAlias = Sequence[Seed | None] | NDArray[np.integer[Any]]
"""One seed (or None) per game: a list, tuple or other sequence, or a numpy integer array."""


# ---------------------------------------------------------------------------
# Replies


class HelloReply(TypedDict):
    """The server's answer to hello (:attr:`Client.server_info`)."""

    version: int
    server: str
    ops: list[str]
    #: The game options ``make`` takes (:class:`SpiderConfig`'s fields, if
    #: this client and the server are of one release); empty from a server
    #: older than this client, which does not list them.
    options: list[str]
    max_games: int
    max_frame: int


class MakeReply(TypedDict):
    """The spec of a batch, ``make``'s reply.

    Besides these keys the dict holds every other key of the reply as the
    server sent it, among them the game options it echoes (``rules``,
    ``suits``, ``max_steps``, ...); ``config`` holds those as a
    :class:`SpiderConfig`, typed, which is the way to read them where a
    type checker reads the code (``spec["config"].suits``, not
    ``spec["suits"]``, which the TypedDict does not declare).
    """

    n: int
    num_actions: int
    obs_shape: tuple[int, ...]
    obs_dtype: str
    obs_low: ObsArray
    obs_high: ObsArray
    mask: str
    mask_row_bytes: int
    autoreset: str
    illegal: str
    workers: int
    config: SpiderConfig


_SHM_DTYPES: dict[str, str] = {
    "uint8": "u1",
    "bool": "?",
    "uint16": "<u2",
    "int16": "<i2",
    "int32": "<i4",
    "float32": "<f4",
}


def _whole_number(v: Any, what: str, least: int = 0) -> int:
    """v, which a reply gives as a size, an offset or a count: an integer
    of at least least (not a bool, a float or a string)."""
    if isinstance(v, bool) or not isinstance(v, int) or v < least:
        raise SpiderError("protocol", f"{what} is {v!r}, want an integer of at least {least}")
    return v


class _Shared:
    """A batch's shared memory, mapped: the buffers read-only, the actions
    writable, and a numpy view of each array (PROTOCOL.md, Shared memory)."""

    def __init__(self, reply: dict[str, Any], fds: list[int], n: int):
        sizes = reply.get("shm_size")
        layout = reply.get("shm_layout")
        if len(fds) != 2 or not isinstance(sizes, list) or len(sizes) != 2 or not isinstance(layout, list):
            raise SpiderError("protocol", f"a make reply sharing memory came with {len(fds)} descriptors, want 2")
        self.maps: list[mmap.mmap] = []
        self.views: dict[str, NDArray[Any]] = {}
        try:
            self._map(fds, sizes, layout, n)
        except BaseException:
            # Unmap at once: the error's traceback refers to this object, and
            # would keep both mappings (and the descriptors mmap holds) for as
            # long as the caller keeps the error.
            self.close()
            raise

    def _map(self, fds: list[int], sizes: list[Any], layout: list[Any], n: int) -> None:
        import fcntl  # Linux's, as shared memory is

        for i, (fd, size, prot) in enumerate(
            zip(fds, sizes, (mmap.PROT_READ, mmap.PROT_READ | mmap.PROT_WRITE), strict=True)
        ):
            # A file shrunk after it is mapped kills this process with
            # SIGBUS when a page past its new end is read: map only a file
            # sealed against shrinking (as PROTOCOL.md's server seals both).
            # mmap itself refuses a size past the file's end; the check
            # first says which size and descriptor.
            size = _whole_number(size, "shm_size", 1)
            try:
                held, seals = os.fstat(fd).st_size, fcntl.fcntl(fd, fcntl.F_GET_SEALS)
            except OSError as e:
                raise SpiderError("protocol", f"shared descriptor {i} is not a sealed memfd: {e}") from None
            if not seals & fcntl.F_SEAL_SHRINK:
                raise SpiderError("protocol", f"shared descriptor {i} is not sealed against shrinking")
            if size > held:
                raise SpiderError("protocol", f"shm_size {size} for shared descriptor {i} of {held} bytes")
            self.maps.append(mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=prot))
        for f in layout:
            if not isinstance(f, dict) or not isinstance(f.get("shape"), list):
                raise SpiderError("protocol", f"a shared array's entry is not a map with a shape: {f!r}")
            name, dtype = str(f.get("name")), _SHM_DTYPES.get(str(f.get("dtype")))
            fd, off = _whole_number(f.get("fd"), f"{name}'s fd"), _whole_number(f.get("offset"), f"{name}'s offset")
            shape = tuple(_whole_number(d, f"{name}'s shape") for d in f["shape"])
            # The actions are the one array the client writes, so the one
            # in the writable segment; every other array is in the other.
            if dtype is None or fd != (1 if name == "actions" else 0):
                raise SpiderError("protocol", f"shared array {name!r}: dtype {f.get('dtype')!r}, descriptor {fd}")
            if not shape or shape[0] != n:
                raise SpiderError("protocol", f"shared array {name!r} of shape {shape} for {n} games")
            # Straight into views, never a local: a view left in this frame
            # when a later array fails would keep its map from closing.
            count = int(np.prod(shape))
            self.views[name] = np.frombuffer(self.maps[fd], dtype=dtype, count=count, offset=off).reshape(shape)
        if "actions" not in self.views:  # the step reply's arrays: check's
            raise SpiderError("protocol", "the shared layout lacks 'actions'")
        self.actions = self.views.pop("actions")

    def check(self, n: int, obs_dtype: np.dtype[Any], obs_len: int) -> None:
        """Check each array the step replies will be against the batch's
        spec, as a reply over the socket is checked: a layout of other
        shapes or types would hand the caller arrays of another batch."""
        want: dict[str, tuple[np.dtype[Any], tuple[int, ...]]] = {
            "obs": (obs_dtype, (n, obs_len)),
            "final_obs": (obs_dtype, (n, obs_len)),
            "masks": (np.dtype("u1"), (n, NUM_ACTIONS)),
            "legal": (np.dtype("<i2"), (n, NUM_ACTIONS)),
        }
        want.update((k, (np.dtype(dt), (n,))) for k, dt in _STEP_FIELDS.items())
        for name in _STEP_REQUIRED:
            if name not in self.views:
                raise SpiderError("protocol", f"the shared layout lacks {name!r}")
        for name in self.views:
            # No view in a local here either (see _map): only its type and shape.
            got = (self.views[name].dtype, self.views[name].shape)
            dt, shape = want.get(name, got)  # an array this client does not know: as it is
            if got != (dt, shape):
                raise SpiderError("protocol", f"shared array {name!r} is {got[0]} {got[1]}, want {dt} {shape}")
        if self.actions.dtype != np.dtype("<u2") or self.actions.shape != (n,):
            raise SpiderError(
                "protocol", f"shared actions are {self.actions.dtype} {self.actions.shape}, want uint16 ({n},)"
            )

    def close(self) -> None:
        self.views.clear()
        self.__dict__.pop("actions", None)  # absent when mapping failed
        for m in self.maps:
            try:
                m.close()
            except BufferError:
                pass  # arrays still refer to it: it is unmapped when they go
        self.maps.clear()


class _StepReplyAlways(TypedDict):
    obs: ObsArray
    masks: NDArray[np.uint8]
    num_legal: NDArray[np.int32]
    rewards: NDArray[np.float32]
    terminated: NDArray[np.bool_]
    truncated: NDArray[np.bool_]
    illegal: NDArray[np.bool_]
    score: NDArray[np.int32]
    moves: NDArray[np.int32]
    runs: NDArray[np.uint8]
    episode_return: NDArray[np.float32]
    episode_length: NDArray[np.int32]
    episode_won: NDArray[np.bool_]
    episode_runs: NDArray[np.uint8]


class StepReply(_StepReplyAlways, total=False):
    """The reply to reset and step: one row or item per game (PROTOCOL.md).

    ``masks`` is always unpacked, (n, 1081) of 0/1. ``has_final``,
    ``final_obs`` and ``final_score`` are there under same-step autoreset
    only; ``legal`` (n, 1081) int16, each row starting with the game's
    ``num_legal`` legal actions in increasing order, only for a batch in
    shared memory made with ``legal=True``.
    """

    has_final: NDArray[np.bool_]
    final_obs: ObsArray
    final_score: NDArray[np.int32]
    legal: NDArray[np.int16]


class HintReply(TypedDict):
    """The hint policy's move for one game."""

    action: int
    notation: str
    reason: str


class SpiderError(Exception):
    """A failed request.

    ``code`` is the server's error code (``bad_request``, ``bad_action``,
    ``bad_config``, ...) or one of the client's own: ``closed`` (the client
    was closed; the message says why), ``connection`` (the connection
    broke), ``timeout``, ``order`` (a request while another's reply is
    awaited), ``forked`` (a forked child used its parent's connection) and
    ``protocol`` (the server sent something this client cannot read).
    ``message`` is the server's text; ``str(exc)`` contains it.

    It pickles and copies with both, so an error in a worker process
    (Gymnasium's ``AsyncVectorEnv``, SB3's ``SubprocVecEnv``, a process
    pool) reaches the parent as itself; ``SpiderError(exc)``, as Gymnasium
    re-raises a worker's error, is a copy of ``exc``.
    """

    code: str
    message: str
    report: dict[str, Any] | None = None
    """With code ``eval`` (:func:`spider_env.evaluate`): the report eval
    wrote before it failed, if any."""

    def __init__(self, code: str | SpiderError, message: str | None = None):
        if message is not None:
            c, m = str(code), message
        elif isinstance(code, SpiderError):
            c, m = code.code, code.message
            if code.report is not None:
                self.report = code.report
        else:
            c, m = "error", str(code)
        super().__init__(f"{m} [{c}]")
        self.code = c
        self.message = m

    def __reduce__(self) -> tuple[type[SpiderError], tuple[str, str], dict[str, Any]]:
        return type(self), (self.code, self.message), {"report": self.report}


class SpiderValueError(SpiderError, ValueError):
    """A game option the server refused (code ``bad_config``): a
    :class:`SpiderError` that is also a ValueError, as a bad ``mask`` or
    ``render_mode`` is, so that ``except ValueError`` catches a bad game
    option whichever side checks it. (A batch too large for the server is
    ``limit``, a SpiderError only.)"""


# ---------------------------------------------------------------------------
# Addresses


def check_seconds(name: str, t: object, *, optional: bool = True) -> None:
    """Refuse a timeout that is not a positive number of seconds (or None,
    when ``optional``: no limit), naming it: 0 would make the socket
    non-blocking, and a string would otherwise fail inside a comparison."""
    if t is None and optional:
        return
    if isinstance(t, bool) or not isinstance(t, numbers.Real):
        raise TypeError(
            f"{name} must be a positive number of seconds{' or None' if optional else ''}, not {type(t).__name__}"
        )
    if not float(t) > 0 or not math.isfinite(t):
        raise ValueError(f"{name} must be a positive number of seconds (or None for no timeout), got {t!r}")


def peer_ids(sock: socket.socket, path: str) -> tuple[int | None, int]:
    """The process id (None where the platform does not say) and user id of
    the process listening at the other end of a connected Unix socket:
    SO_PEERCRED where there is one (Linux), else the owner of the socket's
    file."""
    if hasattr(socket, "SO_PEERCRED"):
        # struct ucred: pid_t, then uid_t and gid_t, which are unsigned (a uid
        # of 2**31 or more read as a signed one was another user's).
        cred = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("iII"))
        pid, uid, _ = struct.unpack("iII", cred)
        return pid, uid
    return None, os.stat(path).st_uid


def _check_peer_user(sock: socket.socket, family: int, path: str, address: Address) -> None:
    """Refuse a server run by another user (root aside), who would see every
    action and write every observation and reward. On a Unix socket, the
    process at the other end: the server makes its socket owner-only, so
    another user's is one made reachable on purpose, or taken first at the
    path this user's server was to listen on. Over loopback TCP, the owner
    of the server's end or of the socket listening at the port (where /proc
    says): any local user can listen at a free port, the one a server was
    to take among them, before it starts or after it stops."""
    if not hasattr(os, "getuid"):
        return
    uid = peer_ids(sock, path)[1] if family == socket.AF_UNIX else tcp_server_uid(sock)
    if uid is not None and uid not in (os.getuid(), 0):
        raise SpiderError(
            "connection",
            f"the server at {address} runs as user {uid}, not this user ({os.getuid()}): refused, "
            "since another user's server would see every action and write every observation and reward; "
            "start your own (without an address the env does)",
        )


def tcp_server_uid(sock: socket.socket) -> int | None:
    """The user id that owns the server's side of ``sock``, a TCP connection
    to a loopback address, from /proc/net/tcp and tcp6 (Linux): the
    server's end of the connection once the server has accepted it (a
    server that then closed its listener is still named), else the socket
    listening at the address (its own, the port's wildcard, or for IPv4 the
    address mapped into IPv6, since a dual-stack listener takes IPv4
    connections). None where it is not known: not over loopback, no /proc,
    or neither found."""
    try:
        peer, me = sock.getpeername(), sock.getsockname()
        rip = ipaddress.ip_address(peer[0].split("%")[0])
        lip = ipaddress.ip_address(me[0].split("%")[0])
        rport, lport = int(peer[1]), int(me[1])
    except (OSError, ValueError, TypeError, IndexError):
        return None
    if isinstance(rip, ipaddress.IPv6Address) and rip.ipv4_mapped is not None:
        rip = rip.ipv4_mapped
    if isinstance(lip, ipaddress.IPv6Address) and lip.ipv4_mapped is not None:
        lip = lip.ipv4_mapped
    if not rip.is_loopback or rip.version != lip.version:
        return None

    def proc(packed: bytes, port: int) -> str:
        # Each 32-bit word of the address in network order, printed as a
        # number of the machine's byte order, then the port.
        words = (int.from_bytes(packed[i : i + 4], sys.byteorder) for i in range(0, len(packed), 4))
        return "".join(f"{w:08X}" for w in words) + f":{port:04X}"

    def mapped(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int) -> str:
        return proc(b"\0" * 10 + b"\xff\xff" + ip.packed, port)

    def find(name: str, end: tuple[str, str] | None = None, listen: set[str] | None = None) -> list[str] | None:
        # The line of the socket from end[0] to end[1], or of a listener at
        # one of listen.
        try:
            with open(name) as f:
                for line in f:
                    # sl local_address rem_address st ... uid timeout inode
                    fields = line.split()
                    if len(fields) < 10:
                        continue
                    if end is not None and (fields[1], fields[2]) == end:
                        return fields
                    if listen is not None and fields[3] == "0A" and fields[1] in listen and fields[9] != "0":
                        return fields
        except OSError:
            pass
        return None

    if rip.version == 4:
        # An IPv4 socket's, else an IPv6 one's with the addresses mapped.
        ends = [
            ("/proc/net/tcp", proc(rip.packed, rport), proc(lip.packed, lport)),
            ("/proc/net/tcp6", mapped(rip, rport), mapped(lip, lport)),
        ]
        listeners = [
            ("/proc/net/tcp", {"0" * 8 + f":{rport:04X}", proc(rip.packed, rport)}),
            ("/proc/net/tcp6", {"0" * 32 + f":{rport:04X}", mapped(rip, rport)}),
        ]
    else:  # only IPv6 sockets take a connection to an IPv6 address
        ends = [("/proc/net/tcp6", proc(rip.packed, rport), proc(lip.packed, lport))]
        listeners = [("/proc/net/tcp6", {"0" * 32 + f":{rport:04X}", proc(rip.packed, rport)})]
    for name, src, dst in ends:
        end = find(name, end=(src, dst))
        if end is not None:
            if end[9] != "0":
                return int(end[7])
            break  # not accepted yet (no inode): the listener holds it
    for name, want in listeners:
        ln = find(name, listen=want)
        if ln is not None:
            return int(ln[7])
    return None


def _reply_error(reply: dict[str, Any]) -> SpiderError:
    """The SpiderError an error reply ({"ok": false, ...}) stands for."""
    code = str(reply.get("code", "unknown"))
    kind = SpiderValueError if code == "bad_config" else SpiderError
    return kind(code, str(reply.get("error", "the server gave no message")))


def parse_address(address: Address) -> tuple[int, str | tuple[str, int]]:
    """Return (socket family, socket address) for an address.

    Accepted: ``"host:port"``, ``"tcp://host:port"``, ``("host", port)``,
    ``"unix:/path"``, ``"unix:///path"``, or a path to a Unix socket (one
    that contains a ``/``).
    """
    if isinstance(address, (tuple, list)) and len(address) == 2:
        return socket.AF_INET, (str(address[0]), int(address[1]))
    if not isinstance(address, str):
        address = str(address)  # os.PathLike and the like
    if address.startswith("unix://"):
        return socket.AF_UNIX, address[len("unix://") :]
    if address.startswith("unix:"):
        return socket.AF_UNIX, address[len("unix:") :]
    if address.startswith("tcp://"):
        address = address[len("tcp://") :]
    elif "/" in address:
        return socket.AF_UNIX, address
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"address {address!r}: want host:port, unix:/path or a socket path")
    host = host.strip("[]") or "127.0.0.1"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return family, (host, int(port))


# ---------------------------------------------------------------------------
# A msgpack reader that returns bins as views of the frame


# The deepest nesting of arrays and maps a reply may have, the reply's own
# map counted: the bound the server puts on a request's unknown fields.
# Real replies nest four levels (the reply, shm_layout, its entries, their
# shapes). Deeper is refused before Python's recursion limit is reached.
_MAX_DEPTH = 16


class _Reader:
    __slots__ = ("depth", "items", "mv", "pos")

    def __init__(self, mv: memoryview):
        self.mv = mv
        self.pos = 0
        self.depth = 0
        self.items = 0

    def _nested(self, n: int, is_map: bool) -> Any:
        if self.depth >= _MAX_DEPTH:
            raise SpiderError("protocol", f"a reply nests arrays or maps more than {_MAX_DEPTH} deep")
        self.items += n
        if self.items > _MAX_ITEMS:
            raise SpiderError("protocol", f"a reply's arrays and maps hold more than {_MAX_ITEMS} items")
        self.depth += 1
        v = self._map(n) if is_map else [self.value() for _ in range(n)]
        self.depth -= 1
        return v

    def value(self) -> Any:
        mv = self.mv
        p = self.pos
        b = mv[p]
        p += 1
        if b <= 0x7F:
            self.pos = p
            return b
        if b >= 0xE0:
            self.pos = p
            return b - 0x100
        if 0xA0 <= b <= 0xBF:
            n = b & 0x1F
            self.pos = p + n
            return str(mv[p : p + n], "utf-8")
        if 0x80 <= b <= 0x8F:
            self.pos = p
            return self._nested(b & 0x0F, True)
        if 0x90 <= b <= 0x9F:
            self.pos = p
            return self._nested(b & 0x0F, False)
        if b == 0xC0:
            self.pos = p
            return None
        if b == 0xC2 or b == 0xC3:
            self.pos = p
            return b == 0xC3
        if 0xC4 <= b <= 0xC6:  # bin 8, 16, 32
            n, p = self._len(b - 0xC4, p)
            self.pos = p + n
            return mv[p : p + n]
        if 0xD9 <= b <= 0xDB:  # str 8, 16, 32
            n, p = self._len(b - 0xD9, p)
            self.pos = p + n
            return str(mv[p : p + n], "utf-8")
        if 0xCC <= b <= 0xD3:  # uint 8..64, int 8..64
            fmt = _INT_FORMATS[b - 0xCC]
            self.pos = p + fmt.size
            return fmt.unpack_from(mv, p)[0]
        if b == 0xCA or b == 0xCB:
            fmt = _F32 if b == 0xCA else _F64
            self.pos = p + fmt.size
            return fmt.unpack_from(mv, p)[0]
        if b == 0xDC or b == 0xDD:
            n, p = self._len(b - 0xDB, p)
            self.pos = p
            return self._nested(n, False)
        if b == 0xDE or b == 0xDF:
            n, p = self._len(b - 0xDD, p)
            self.pos = p
            return self._nested(n, True)
        raise SpiderError("protocol", f"unexpected msgpack type byte 0x{b:02x} in a reply")

    def _len(self, k: int, p: int) -> tuple[int, int]:
        # k: 0 for a 1-byte length, 1 for 2 bytes, 2 for 4 bytes.
        fmt = _LEN_FORMATS[k]
        return fmt.unpack_from(self.mv, p)[0], p + fmt.size

    def _map(self, n: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        mv = self.mv
        for _ in range(n):
            p = self.pos
            b = mv[p]
            k: Any
            if 0xA0 <= b <= 0xBF:  # the usual key, a short string: read it here
                p += 1
                k = _key(mv[p : p + (b & 0x1F)])
                p += b & 0x1F
            else:
                k = self.value()
                if isinstance(k, memoryview):
                    k = bytes(k)
                elif isinstance(k, (list, dict)):
                    raise SpiderError("protocol", f"a reply's map has a key of type {type(k).__name__}")
                p = self.pos
            c = mv[p]
            if 0xC4 <= c <= 0xC6:  # the usual value, a bin: slice it here
                if c == 0xC4:
                    m, p = mv[p + 1], p + 2
                else:
                    m, p = self._len(c - 0xC4, p + 1)
                out[k] = mv[p : p + m]
                self.pos = p + m
            else:
                self.pos = p
                out[k] = self.value()
        return out


_KEYS: dict[bytes, str] = {}


def _key(raw: memoryview) -> str:
    """A map key as str, cached: replies use the same few keys again and again."""
    b = raw.tobytes()
    k = _KEYS.get(b)
    if k is None:
        k = str(b, "utf-8")
        if len(_KEYS) < 1024:
            _KEYS[b] = k
    return k


_INT_FORMATS = [struct.Struct(f) for f in (">B", ">H", ">I", ">Q", ">b", ">h", ">i", ">q")]
_LEN_FORMATS = [struct.Struct(f) for f in (">B", ">H", ">I")]
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">d")


def decode_frame(payload: bytes | bytearray | memoryview) -> Any:
    """Decode one msgpack value; bins come back as memoryviews of payload."""
    mv = memoryview(payload).cast("B")
    r = _Reader(mv)
    try:
        v = r.value()
    except (IndexError, struct.error, UnicodeDecodeError) as e:
        raise SpiderError("protocol", f"a reply is not valid msgpack: {e}") from None
    if r.pos > len(mv):  # a string or bin declared longer than what is left (a slice stops at the end)
        raise SpiderError("protocol", f"a reply is cut short: its msgpack value needs {r.pos - len(mv)} more bytes")
    if r.pos != len(mv):
        raise SpiderError("protocol", f"a reply has {len(mv) - r.pos} bytes after its msgpack value")
    return v


# ---------------------------------------------------------------------------
# The client


_STEP_FIELDS: dict[str, str] = {
    # key: numpy dtype of its one item per game
    "num_legal": "<i4",
    "rewards": "<f4",
    "terminated": "?",
    "truncated": "?",
    "illegal": "?",
    "score": "<i4",
    "moves": "<i4",
    "runs": "u1",
    "episode_return": "<f4",
    "episode_length": "<i4",
    "episode_won": "?",
    "episode_runs": "u1",
    "has_final": "?",
    "final_score": "<i4",
}

_OBS_DTYPES: dict[str, np.dtype[Any]] = {"uint8": np.dtype("u1"), "float32": np.dtype("<f4")}


def _field(op: str, reply: dict[str, Any], key: str, want: type) -> Any:
    """reply[key] of op's reply, which must be of type want (a bool is not an int)."""
    v = reply.get(key)
    if not isinstance(v, want) or (want is int and isinstance(v, bool)):
        raise SpiderError("protocol", f"the {op} reply's {key!r} is {v!r}; want a {want.__name__}")
    return v


def _batch_value(key: str, v: Any, kind: type) -> Any:
    """A batch field's value as msgpack sends it, refusing what is not of
    its kind rather than converting it (2.5 games, True workers)."""
    if kind is str:
        if not isinstance(v, str):
            raise TypeError(f"{key} must be a str, not {type(v).__name__}")
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{key} must be a number, not {type(v).__name__}")
    if kind is int:
        if not isinstance(v, numbers.Integral):
            raise TypeError(f"{key} must be an integer, not {type(v).__name__}")
        return operator.index(v)  # numpy integers as Python's
    return float(v)


def _seed(seed: int | np.integer[Any]) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (numbers.Integral, np.integer)):
        raise TypeError(f"a seed must be an integer, not {type(seed).__name__}")
    s = operator.index(seed)
    if s < 0 or s >= 1 << 64:
        raise ValueError(f"seed {s} is outside 0 to 2**64-1")
    return s


def _wait_until(sock: socket.socket, deadline: float | None) -> None:
    """Give the socket's next wait what is left until deadline (None: no
    bound). Past it the socket does not wait: what has come already is
    still read (a reply that came in time is not refused for being read
    late), and a socket with nothing more raises (:func:`_recv`)."""
    if deadline is not None:
        sock.settimeout(max(deadline - time.monotonic(), 0.0))


def _recv(call: Any, *args: Any) -> Any:
    """call(*args), a receive on a socket that _wait_until may have made
    non-blocking: nothing to read past the deadline is a timeout."""
    try:
        return call(*args)
    except BlockingIOError:
        raise TimeoutError("timed out") from None


# The clients of this process: a forked child marks its copies, whose
# connections are the parent's (see Client._usable).
_clients: weakref.WeakSet[Client] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for c in list(_clients):
        c._forked = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Client:
    """One connection to a spider server, owning one batch of games.

    ``address`` is ``"host:port"``, ``("host", port)``, ``"unix:/path"`` or a
    Unix socket path. The client says hello on connect (the reply is
    :attr:`server_info`); then :meth:`make` creates the batch and
    :meth:`reset` / :meth:`step` play it. A failed request raises
    :class:`SpiderError`. Not safe for concurrent use.

    ``timeout`` bounds the wait for each reply, from asking to its last
    byte however slowly it comes, and the sending of each request
    (seconds; None: no bound): a server that stops answering raises
    SpiderError ``"timeout"`` and closes the connection, whose stream can
    no longer be trusted. A reply longer than the batch can produce
    (:attr:`max_reply`) is refused before anything is allocated for it.
    """

    spec: MakeReply | None
    """The last :meth:`make` reply, None before the first."""

    server_info: HelloReply
    """The server's hello reply: protocol version, ops and limits."""

    def __init__(self, address: Address, *, timeout: float | None = 60.0, connect_timeout: float = 10.0):
        check_seconds("timeout", timeout)
        check_seconds("connect_timeout", connect_timeout)
        family, addr = parse_address(address)
        self.address = address
        self._timeout = timeout
        self.max_reply = _SETUP_REPLY
        """The longest reply frame taken, in bytes: 4 MiB, and after
        :meth:`make` 4 MiB more than the largest step reply of the batch."""
        self._sock: socket.socket | None = None
        self._ids = itertools.count(1)
        self.spec = None
        self._obs_dtype: np.dtype[Any] = np.dtype("u1")
        self._obs_len = self._n = 0
        self._bits = False
        self._shared: _Shared | None = None
        self._want_fds: list[int] | None = None  # where a reply's descriptors go (make with shm)
        self._seq = 0  # the last shared step's sequence number
        self.shm_error: str | None = None
        """Why the last make asked for shared memory and did not get it."""
        self._unix = family == socket.AF_UNIX
        self._pending: tuple[int, str] | None = None  # a request sent whose reply is not read yet
        self._pending_op = ""
        self._closed_why = "the connection was closed"  # what closed it, for later requests
        self._forked = False  # set in a forked child: the connection is the parent's
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(connect_timeout)
            sock.connect(addr)
            sock.settimeout(timeout)
            if family != socket.AF_UNIX:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as e:
            sock.close()
            raise SpiderError(
                "connection",
                f"cannot connect to the spider server at {address}: {e} "
                "(is `spider serve` running there? without an address the env starts its own)",
            ) from e
        try:
            _check_peer_user(sock, family, str(addr), address)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._pid = os.getpid()
        _clients.add(self)
        try:
            self.server_info = self._hello()
        except BaseException:
            self.close()
            raise

    # -- framing ------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._sock is None

    def request(self, req: dict[str, Any]) -> dict[str, Any]:
        """Send one request map and return the reply map (bins as memoryviews).

        The raw protocol, for what the typed methods do not cover. Raises
        SpiderError for an error reply.
        """
        self.send(req)
        return self.receive()

    def send(self, req: dict[str, Any]) -> None:
        """Send one request map without waiting for its reply; :meth:`receive`
        reads it. One request may be outstanding at a time: the server
        answers in order, and this keeps a reply from being read by the
        wrong caller."""
        sock = self._usable(f"op {req.get('op')!r}")
        if self._pending is not None:
            raise SpiderError(
                "order", f"op {req.get('op')!r} while the reply to {self._pending[1]!r} is still to be received"
            )
        rid = next(self._ids)
        req["id"] = rid
        payload = msgpack.packb(req, use_bin_type=True)
        try:
            sock.sendall(_HDR.pack(len(payload)) + payload)
        except TimeoutError as e:
            waited = sock.gettimeout()  # before close, which sets its own
            err = SpiderError("timeout", f"the spider server did not take {req.get('op')!r} within {waited:g} s")
            self.close(err.message)
            raise err from e
        except OSError as e:
            err = SpiderError("connection", f"the connection to the spider server broke: {e}")
            try:
                err = self._refusal(sock) or err
            finally:
                self.close(err.message)  # a Ctrl-C while the refusal is read closes it too
            raise err from e
        except BaseException as e:
            self.close(f"{type(e).__name__} while sending {req.get('op')!r}")  # perhaps cut off mid-frame
            raise
        self._pending = (rid, str(req.get("op")))

    def _refusal(self, sock: socket.socket) -> SpiderError | None:
        """The error the server sent before it closed the connection, if it
        did: a server that refuses a connection at once (over
        ``--max-conns-per-peer``, say) says why and closes, and a Unix
        socket's send then fails with "broken pipe" while the reason waits
        to be read."""
        try:
            sock.settimeout(1.0)  # the server has closed: what it sent is here, or nothing is
            reply = self._read_frame(sock, None, time.monotonic() + 1.0)
        except Exception:
            return None
        if not isinstance(reply, dict) or reply.get("ok") is not False:
            return None
        return _reply_error(reply)

    @property
    def pending(self) -> bool:
        """Whether a request was sent whose reply is still to be received."""
        return self._pending is not None

    def wait_reply(self, timeout: float) -> bool:
        """Whether the reply to the request in flight has begun to arrive
        within ``timeout`` seconds (0: without waiting). It reads nothing:
        the request stays in flight either way, for :meth:`receive`. A
        connection the server closed counts as arrived (receive says
        so)."""
        sock = self._usable("wait_reply")
        if self._pending is None:
            raise SpiderError("order", "wait_reply with no request outstanding")
        t: object = timeout
        if isinstance(t, bool) or not isinstance(t, numbers.Real) or not 0 <= float(t) < float("inf"):
            raise ValueError(f"timeout must be a finite number of seconds, 0 or more, got {timeout!r}")
        # selectors: epoll or poll where there is one (a descriptor past
        # FD_SETSIZE is fine), select on Windows. Waits past about 24 days
        # overflow epoll's milliseconds: none is meant that long.
        with selectors.DefaultSelector() as sel:
            sel.register(sock, selectors.EVENT_READ)
            return bool(sel.select(min(float(t), 2_000_000.0)))  # PEP 475: a signal does not cut it short

    def discard(self) -> None:
        """Read and drop the reply still to be received, if any: the request
        is abandoned (a reset replaces what a step in flight did, which the
        server has played), so an error reply to it is dropped too. A
        connection that breaks still raises."""
        if self._pending is None:
            return
        try:
            self.receive()
        except SpiderError as e:
            if self._sock is None or e.code == "forked":
                raise

    def receive(self) -> dict[str, Any]:
        """Wait for the reply to the request :meth:`send` sent, and return it
        as :meth:`request` would."""
        sock = self._usable("receive")
        if self._pending is None:
            raise SpiderError("order", "receive with no request outstanding")
        rid, self._pending_op = self._pending
        self._pending = None
        try:
            reply = self._read_reply(sock, self._want_fds)
        except TimeoutError as e:
            # The reply may still come: the stream cannot be trusted any more.
            waited = sock.gettimeout()  # before close, which sets its own
            err = SpiderError(
                "timeout",
                f"the spider server did not answer {self._pending_op!r} within {waited:g} s "
                "(the client's timeout; the connection is closed)",
            )
            self.close(err.message)
            raise err from e
        except OSError as e:
            err = SpiderError("connection", f"the connection to the spider server broke: {e}")
            self.close(err.message)
            raise err from e
        except SpiderError as e:
            self.close(e.message)  # the server closed the connection, or sent what cannot be read
            raise
        except BaseException as e:
            # Cut off mid-frame (a bad reply, KeyboardInterrupt): the stream
            # cannot be trusted any more.
            self.close(f"{type(e).__name__} while waiting for the reply to {self._pending_op!r}")
            raise
        if not isinstance(reply, dict) or "ok" not in reply:
            err = SpiderError("protocol", 'a reply is not a map with "ok"')
            self.close(err.message)
            raise err
        if not reply["ok"]:
            err = _reply_error(reply)
            if "id" in reply and reply["id"] != rid:
                # A refusal of another request: the stream is out of step.
                # (One without an id is the server's own, or of a request
                # whose id it did not read.)
                err = SpiderError("protocol", f"reply id {reply['id']!r} does not match request id {rid}: {err}")
                self.close(err.message)
                raise err
            if err.code == "bad_frame":
                # The server may close the connection after bad_frame.
                self.close(err.message)
            raise err
        if reply.get("id") != rid:
            err = SpiderError("protocol", f"reply id {reply.get('id')!r} does not match request id {rid}")
            self.close(err.message)
            raise err
        if self._pending_op == "make":
            # A new batch, made by make() or through request(): its replies
            # may be as long as its step replies.
            self.max_reply = _reply_limit(reply)
        return reply

    def _usable(self, what: str) -> socket.socket:
        """The socket, or the SpiderError that says why there is none to use."""
        sock = self._sock
        if self._forked and os.getpid() != self._pid:
            raise SpiderError(
                "forked",
                f"{what} in a forked child: this connection belongs to process {self._pid}, and two processes "
                "on one connection would take each other's replies; make the env in the child instead "
                "(give Gymnasium's AsyncVectorEnv or SB3's SubprocVecEnv a function that makes it)",
            )
        if sock is None:
            raise SpiderError("closed", f"{what} on a closed client: {self._closed_why}")
        return sock

    @staticmethod
    def _recv_exact(sock: socket.socket, view: memoryview, deadline: float | None) -> None:
        got, n = 0, len(view)
        while got < n:
            _wait_until(sock, deadline)
            k = _recv(sock.recv_into, view[got:], n - got)
            if k == 0:
                raise SpiderError("connection", "the spider server closed the connection")
            got += k

    def _read_reply(self, sock: socket.socket, fds: list[int] | None = None) -> Any:
        # The timeout bounds the whole reply, not each recv: a server that
        # sends a byte now and then must not hold the client forever.
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        try:
            return self._read_frame(sock, fds, deadline)
        finally:
            sock.settimeout(self._timeout)

    def _read_frame(self, sock: socket.socket, fds: list[int] | None, deadline: float | None) -> Any:
        hdr = bytearray(4)
        if fds is None:
            self._recv_exact(sock, memoryview(hdr), deadline)
        else:
            # The descriptors come with the frame's first bytes.
            _wait_until(sock, deadline)
            data, got, flags, _ = _recv(socket.recv_fds, sock, 4, 2)
            fds.extend(got)
            if not data:
                raise SpiderError("connection", "the spider server closed the connection")
            if flags & socket.MSG_CTRUNC:
                raise SpiderError("protocol", "the server sent more descriptors than a make reply has")
            hdr[: len(data)] = data
            self._recv_exact(sock, memoryview(hdr)[len(data) :], deadline)
        (n,) = _HDR.unpack(hdr)
        if n > self.max_reply:
            raise SpiderError(
                "protocol",
                f"the server declared a reply of {n} bytes, over the {self.max_reply} this client takes "
                + ("before a batch is made" if self.max_reply == _SETUP_REPLY else "for this batch"),
            )
        # A fresh, uninitialised buffer per reply: the arrays returned are
        # views of it and must not be overwritten by a later reply.
        mv = np.empty(n, dtype=np.uint8).data
        self._recv_exact(sock, mv, deadline)
        return decode_frame(mv)

    # -- operations -----------------------------------------------------------

    def _hello(self) -> HelloReply:
        r = self.request({"op": "hello", "version": PROTOCOL_VERSION})
        version = _field("hello", r, "version", int)
        if version != PROTOCOL_VERSION:
            raise SpiderError(
                "protocol", f"the server speaks protocol version {version}; this client speaks {PROTOCOL_VERSION}"
            )
        return HelloReply(
            version=version,
            server=_field("hello", r, "server", str),
            ops=[str(op) for op in _field("hello", r, "ops", list)],
            options=[str(k) for k in _field("hello", r, "options", list)] if "options" in r else [],
            max_games=_field("hello", r, "max_games", int),
            max_frame=_field("hello", r, "max_frame", int),
        )

    def make(
        self,
        config: SpiderConfig | Mapping[str, Any] | None = None,
        *,
        n: int | None = None,
        autoreset: str | None = None,
        illegal: str | None = None,
        illegal_penalty: float | None = None,
        mask: str | None = None,
        workers: int | None = None,
        shm: bool = False,
        legal: bool = False,
        **game: Any,
    ) -> MakeReply:
        """Create (or replace) the connection's batch; return its spec.

        The game is ``config`` with the keyword arguments ``game`` (the
        fields of :class:`SpiderConfig`: rules, suits, max_steps, ...) laid
        over it; the other arguments are the batch's (PROTOCOL.md). None,
        and a field not given, leaves the server's default.

        ``shm=True`` asks for the batch's arrays in shared memory (a Unix
        socket to a server on Linux): :attr:`shared` is then True, and
        :meth:`reset` and :meth:`step` return views of the shared arrays,
        overwritten by the next reset or step. Where the server cannot
        share memory the batch is served over the socket as usual and
        :attr:`shm_error` says why. ``legal=True`` with shared memory also
        lists each game's legal actions there (the replies' ``legal``);
        over the socket the server sends no lists.
        """
        given = SpiderConfig.resolve(config, **game).to_request()
        req: dict[str, Any] = {"op": "make", **given}
        for key, v, kind in (
            ("n", n, int),
            ("autoreset", autoreset, str),
            ("illegal", illegal, str),
            ("illegal_penalty", illegal_penalty, float),
            ("mask", mask, str),
            ("workers", workers, int),
        ):
            if v is not None:
                req[key] = _batch_value(key, v, kind)
        if shm:
            req["shm"] = True
            if legal:
                req["legal"] = True
        fds: list[int] = []
        try:
            # The reply's descriptors go to fds (see receive).
            self._want_fds = fds if shm and self._unix else None
            reply = self.request(req)
            # The server made the batch and dropped the old one: from here
            # on, whatever this client refuses in the reply closes the
            # connection, so that it never plays the server's batch by the
            # old spec, nor one it could not read.
            self._drop_shared()
            self.spec = None
            shared: _Shared | None = None
            try:
                if reply.get("shm") is True:
                    shared = _Shared(reply, fds, _field("make", reply, "n", int))
                spec, dtype, obs_len = self._read_spec(reply, given, req, shared is not None)
                if shared is not None:
                    shared.check(spec["n"], dtype, obs_len)
            except BaseException as e:
                if shared is not None:
                    shared.close()
                why = e.message if isinstance(e, SpiderError) else f"{type(e).__name__}: {e}"
                err = SpiderError("protocol", f"the make reply: {why}")
                self.close(err.message)
                if isinstance(e, Exception):
                    raise err from None
                raise
        finally:
            self._want_fds = None
            for fd in fds:
                os.close(fd)  # mapped, or not wanted
        self.shm_error = None
        if shm and shared is None:
            self.shm_error = str(reply.get("shm_error", "the server does not offer shared memory (it is older)"))
        self.spec = spec
        self._obs_dtype = dtype
        self._obs_len = obs_len
        self._n = spec["n"]
        self._bits = spec["mask"] == "bits"
        self._shared = shared
        if shared is None and self._sock is not None:
            # A receive buffer that holds a whole step reply: it arrives in
            # fewer pieces, each of which wakes this process. Never a
            # smaller one than the kernel gave (setting one turns off its
            # growth): a reply longer than a receive window smaller than
            # the loopback's 64 KiB segment waits out TCP's 200 ms persist
            # timer for each piece past the window. Sized for the longest
            # step reply (same-step adds a final observation a game), and
            # twice that, as the kernel keeps about half for its own
            # bookkeeping.
            rows = 2 if spec["autoreset"] == "same-step" else 1
            longest = 4096 + self._n * (rows * obs_len * dtype.itemsize + spec["mask_row_bytes"] + 64)
            want = min(max(2 * longest, _MIN_RCVBUF), _MAX_RCVBUF)
            try:
                if self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) < want:
                    self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, want)
            except OSError:
                pass
        return spec

    @staticmethod
    def _read_spec(
        reply: dict[str, Any], given: dict[str, Any], req: dict[str, Any], shared: bool
    ) -> tuple[MakeReply, np.dtype[Any], int]:
        """The make reply to req (whose game options are given) as a spec,
        its observations' dtype and length; a reply this client cannot use,
        or one that made another batch than req asked for, raises
        SpiderError."""
        # A server older than this client ignores options it does not know
        # (as the protocol asks): refuse rather than play another game.
        unknown = [k for k in given if k not in reply]
        if unknown:
            raise SpiderError(
                "protocol", f"the server does not know the game options {unknown}: it is older than this client"
            )
        for k, v in req.items():
            if k == "mask" and shared:
                continue  # a shared batch's masks are bytes, whatever was asked
            if k in given or k in ("n", "autoreset", "illegal", "mask"):
                got = reply.get(k)
                if not _echoes(v, got):
                    raise SpiderError("protocol", f"{k} is {got!r}, not the {v!r} asked for")
        reply.pop("ok", None)
        reply.pop("id", None)
        obs_dtype = _field("make", reply, "obs_dtype", str)
        dtype = _OBS_DTYPES.get(obs_dtype)
        if dtype is None:
            raise SpiderError("protocol", f"unknown obs_dtype {obs_dtype!r}")
        shape = tuple(_whole_number(x, "obs_shape", 1) for x in _field("make", reply, "obs_shape", list))
        obs_len = int(np.prod(shape))
        bounds = []
        for k in ("obs_low", "obs_high"):
            b = _field("make", reply, k, memoryview)
            if len(b) != obs_len * dtype.itemsize:
                raise SpiderError("protocol", f"{k} has {len(b)} bytes for an observation of {obs_len} {dtype}")
            bounds.append(np.frombuffer(b, dtype=dtype).copy().reshape(shape))
        num_actions = _field("make", reply, "num_actions", int)
        if num_actions != NUM_ACTIONS:
            raise SpiderError("protocol", f"num_actions {num_actions} (this client knows {NUM_ACTIONS})")
        try:
            config = SpiderConfig.from_spec(reply)
        except TypeError as e:
            raise SpiderError("protocol", f"the make reply's game options: {e}") from None
        mask = _field("make", reply, "mask", str)
        row = _field("make", reply, "mask_row_bytes", int)
        if row != {"bytes": NUM_ACTIONS, "bits": PACKED_ROW_BYTES}.get(mask):
            raise SpiderError("protocol", f"mask_row_bytes {row} for masks as {mask!r}")
        typed = MakeReply(
            n=_whole_number(_field("make", reply, "n", int), "n", 1),
            num_actions=num_actions,
            obs_shape=shape,
            obs_dtype=obs_dtype,
            obs_low=bounds[0],
            obs_high=bounds[1],
            mask=mask,
            mask_row_bytes=row,
            autoreset=_field("make", reply, "autoreset", str),
            illegal=_field("make", reply, "illegal", str),
            workers=_field("make", reply, "workers", int),
            config=config,
        )
        reply.update(typed)
        return cast(MakeReply, reply), dtype, obs_len  # the typed keys, and the rest as the server sent them

    @property
    def shared(self) -> bool:
        """Whether the batch's arrays are in shared memory (``make(shm=True)``)."""
        return self._shared is not None

    def _drop_shared(self) -> None:
        if self._shared is not None:
            self._shared.close()
            self._shared = None

    def reset(
        self,
        seed: Seed | None = None,
        reset_mask: npt.ArrayLike | None = None,
        seeds: Seeds | None = None,
    ) -> StepReply:
        """Reset games and return the step reply as a dict of numpy arrays.

        With ``seed`` every game is reset, game i seeded with ``seed + i``
        (Gymnasium's convention: its deals are a single game's reset with
        that seed); with ``seeds`` (n seeds or None) every game, game i
        from its own seed, or to its next episode where it is None; with
        ``reset_mask`` (n booleans) only those games go to their next
        episode, or with ``seeds`` too are reset as ``seeds`` alone would
        reset them (``seed`` with it still resets every game); with none of
        them every game goes to its next episode (or, on a batch never
        reset, to a seed the server draws).
        """
        req: dict[str, Any] = {"op": "reset"}
        if seed is not None:
            req["seed"] = _seed(seed)
        if seeds is not None:
            req["seeds"] = [None if s is None else _seed(s) for s in seeds]
        if reset_mask is not None:
            req["reset_mask"] = np.asarray(reset_mask, dtype=bool).astype(np.uint8).tobytes()
        return self._decode_step(self.request(req))

    def step(self, actions: npt.ArrayLike, env_ids: npt.ArrayLike | None = None) -> StepReply:
        """Play one action per game (n integers) and return the step reply."""
        self.step_send(actions, env_ids)
        return self.step_receive()

    def step_send(self, actions: npt.ArrayLike, env_ids: npt.ArrayLike | None = None) -> None:
        """Send a step (one action per game) and return at once, while the
        server plays it; :meth:`step_receive` waits for the reply. The
        policy can work meanwhile (SB3's ``step_async`` / ``step_wait``).

        ``env_ids`` (strictly increasing game indices) steps only those
        games; ``actions`` is still one per game, and only the entries of
        those games are read. The reply's rows of the other games are as
        they were."""
        # Before anything is written where the server reads actions: a
        # forked child, or a step while another's reply is awaited, must
        # not touch the shared memory.
        self._usable("op 'step'")
        if self._pending is not None:
            raise SpiderError("order", f"op 'step' while the reply to {self._pending[1]!r} is still to be received")
        a = np.asarray(actions)
        if a.dtype.kind not in "iub":
            if a.dtype.kind == "f" and np.all(np.mod(a, 1) == 0):
                a = a.astype(np.int64)
            else:
                raise TypeError(f"actions must be integers, got dtype {a.dtype}")
        a = a.reshape(-1)
        req: dict[str, Any] = {"op": "step"}
        if env_ids is not None:
            req["env_ids"] = np.asarray(env_ids).astype("<i4", copy=False).tobytes()
        encodable = not a.size or (a.min() >= 0 and a.max() <= 0xFFFF)
        shared = self._shared
        if shared is not None and encodable and a.size == self._n:
            # The actions go in the shared memory; the request only says step.
            np.copyto(shared.actions, a, casting="unsafe")
            self._seq += 1
            req["seq"] = self._seq
        elif not encodable:
            # Not encodable as uint16: send the integer array form and let
            # the server say what is wrong.
            req["actions"] = [int(x) for x in a]
        else:
            req["actions"] = a.astype("<u2", copy=False).tobytes()
        self.send(req)

    def step_receive(self) -> StepReply:
        """The reply to the step :meth:`step_send` sent."""
        return self._decode_step(self.receive())

    def render(self, game: int = 0) -> str:
        """The board of a game as a player sees it."""
        text: str = _field("render", self.request({"op": "render", "game": int(game)}), "text", str)
        return text

    def render_rgb(self, game: int = 0) -> NDArray[np.uint8]:
        """The board of a game as a player sees it, drawn by the server: a
        (height, width, 3) uint8 RGB image (``render_mode="rgb_array"``)."""
        r = self.request({"op": "render", "game": int(game), "mode": "rgb_array"})
        h, w = _field("render", r, "height", int), _field("render", r, "width", int)
        rgb = np.frombuffer(_field("render", r, "rgb", memoryview), dtype=np.uint8)
        if rgb.size != h * w * 3:
            raise SpiderError("protocol", f"rgb has {rgb.size} bytes for a {h}x{w} picture")
        return rgb.reshape(h, w, 3)

    def hint(self, game: int = 0) -> HintReply:
        """Ask the server for its recommended move for one game: the action
        id, its notation (like "3>7x4") and the reason."""
        r = self.request({"op": "hint", "game": int(game)})
        return HintReply(
            action=_field("hint", r, "action", int),
            notation=_field("hint", r, "notation", str),
            reason=_field("hint", r, "reason", str),
        )

    def close(self, why: str | None = None) -> None:
        """Say close to the server (best effort) and close the socket.
        Idempotent. ``why`` (what broke the connection) is what later
        requests' ``closed`` errors say; given to a closed client, it is
        added to what they say."""
        sock = self._sock
        if sock is None:
            if why and why not in self._closed_why:  # closed already: what else the caller knows is said too
                self._closed_why += f"; {why}"
            return
        if why:
            self._closed_why = f"the connection was closed: {why}"
        self._sock = None
        self._pending = None  # no reply will be read
        self._drop_shared()
        try:
            if os.getpid() == getattr(self, "_pid", None):
                # Not in a forked child, whose copy of the socket is the
                # parent's connection too: only the parent says close.
                sock.settimeout(1.0)
                payload = msgpack.packb({"op": "close"})
                sock.sendall(_HDR.pack(len(payload)) + payload)
        except OSError:
            pass
        finally:
            try:
                sock.close()
            except OSError:
                pass

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # the socket would close anyway; this says close first
        try:
            self.close()
        except Exception:
            pass

    # -- decoding -------------------------------------------------------------

    def _decode_step(self, reply: dict[str, Any]) -> StepReply:
        try:
            return self._step_arrays(reply)
        except SpiderError as e:
            self.close(e.message)  # a reply that cannot be read leaves no trust in the stream
            raise

    def _step_arrays(self, reply: dict[str, Any]) -> StepReply:
        if self.spec is None:
            raise SpiderError("protocol", "a step reply before make")
        if self._shared is not None:
            if reply.get("done") is not True:
                raise SpiderError("protocol", "a step reply of a batch in shared memory without done")
            return cast(StepReply, dict(self._shared.views))
        n, obs_len, dtype = self._n, self._obs_len, self._obs_dtype
        out: dict[str, NDArray[Any]] = {}

        def arr(key: str, dt: npt.DTypeLike, count: int) -> NDArray[Any]:
            b = reply.get(key)
            if not isinstance(b, memoryview):
                raise SpiderError("protocol", f"the step reply has no bin {key!r}")
            if len(b) % np.dtype(dt).itemsize:
                raise SpiderError("protocol", f"{key} has {len(b)} bytes, not a whole number of {np.dtype(dt)}")
            a = np.frombuffer(b, dtype=dt)
            if a.size != count:
                raise SpiderError("protocol", f"{key} has {a.size} items; want {count}")
            return a

        out["obs"] = arr("obs", dtype, n * obs_len).reshape(n, obs_len)
        if self._bits:
            packed = arr("masks", np.uint8, n * PACKED_ROW_BYTES).reshape(n, PACKED_ROW_BYTES)
            out["masks"] = np.unpackbits(packed, axis=1, count=NUM_ACTIONS, bitorder="little")
        else:
            out["masks"] = arr("masks", np.uint8, n * NUM_ACTIONS).reshape(n, NUM_ACTIONS)
        # Under same-step every reply holds the finals, which the envs read.
        finals = self.spec["autoreset"] == "same-step"
        for key, dt in _STEP_FIELDS.items():
            if key in reply or key in _STEP_REQUIRED or (finals and key in _FINALS):
                out[key] = arr(key, dt, n)
        if "final_obs" in reply or finals:
            out["final_obs"] = arr("final_obs", dtype, n * obs_len).reshape(n, obs_len)
        return cast(StepReply, out)  # every required key is there, each checked


_STEP_REQUIRED = StepReply.__required_keys__
_FINALS = ("has_final", "final_score")


def _reply_limit(make_reply: dict[str, Any]) -> int:
    """The longest reply a batch made by make_reply can send: a step reply
    (an observation and a final one, a mask row of bytes and the per-game
    fields, 35 bytes, for every game) beside what any reply takes. A reply
    that does not say (which make() then refuses) leaves the setup bound."""
    n, shape = make_reply.get("n"), make_reply.get("obs_shape")
    dtype = _OBS_DTYPES.get(make_reply.get("obs_dtype"))  # type: ignore[arg-type]
    if not isinstance(n, int) or not isinstance(shape, list) or dtype is None:
        return _SETUP_REPLY
    obs = dtype.itemsize
    for x in shape:
        if not isinstance(x, int):
            return _SETUP_REPLY
        obs *= x
    return _SETUP_REPLY + max(n, 0) * (2 * max(obs, 0) + NUM_ACTIONS + 64)


def _echoes(sent: Any, echoed: Any) -> bool:
    """Whether a make reply's echo of a field is what was sent, as the
    server resolves it (PROTOCOL.md): a name in lower case, 0 as a default
    (any value), a negative number as any negative one (max_steps' -1)."""
    if isinstance(sent, str):
        # The server folds case as Go does, which Python's lower() does not
        # match beyond ASCII ("\u017fame-step" is same-step there): a name
        # with other letters is only checked to come back as a string.
        return isinstance(echoed, str) and (echoed == sent.lower() or not sent.isascii())
    if isinstance(echoed, bool) or not isinstance(echoed, (int, float)):
        return False
    return sent == 0 or echoed == sent or (sent < 0 and echoed < 0)


@contextlib.contextmanager
def _whole(client: Client, what: str) -> Iterator[None]:
    """Run a request and the env's bookkeeping of its reply as one: if
    they are cut apart (KeyboardInterrupt between sending and reading, or
    after the server played the step but before the env took note), the
    connection is closed, so that the env says so at its next call rather
    than play on from a state the server no longer has. A Ctrl-C before
    anything was sent closes it too (which of the two it was cannot be
    told). An error reply (the server changed nothing) and a refusal
    raised as an ``Exception`` pass as they are."""
    try:
        yield
    except SpiderError as e:
        if e.code == "protocol":
            client.close(e.message)
        raise
    except Exception:
        raise
    except BaseException as e:
        client.close(
            f"{type(e).__name__} during {what}: the env cannot tell where its games stand "
            "(reset a SpiderEnv, which opens anew, or make a new vector env)"
        )
        raise
